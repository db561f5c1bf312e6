// Long on purpose: every durable write of the hive goes through this one file (atomic
// replace, batches, flushes issued together, the temp files and their sweep), so the crash
// order and the refusal of planted symlinks and FIFOs are written down once.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { openRegularWith, readRegularText } from './regular-file.ts';
import { HiveError } from '../errors.ts';
import { hiveModes } from './modes.ts';
import { fsyncDelayMs } from '../testing/seams.ts';

/**
 * Crash-safe file writes. Every durable write follows the same four steps:
 *
 *   1. write the bytes to `.tmp-<name>-<rand>` in the target directory
 *   2. fsync that file            (crash before: the temp file is swept at start)
 *   3. rename it to its final name (atomic: readers see old or new, never half)
 *   4. fsync the directory         (until then a power cut may forget the rename)
 *
 * Readers skip names that start with `.`, so a temp file is never mistaken for data.
 * Single writes are synchronous on purpose: inside a worker thread they block only that
 * worker and skip libuv's shared 4-thread pool, which every worker would contend for.
 * Batches (`writeFilesAtomicAsync`, `syncFileAsync`) issue their flushes together on the
 * pool instead, where the disk serves them faster than one after another.
 */

export const TMP_PREFIX = '.tmp-';

/** Waits of the slow-disk seam (src/testing/seams.ts: `fsyncDelayMs`; 0 in production). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * fdatasync a file by path on libuv's thread pool: several of these run at once, and the
 * disk serves concurrent flushes faster than the same flushes one after another.
 */
export async function syncFileAsync(file: string): Promise<void> {
  await syncPathAsync(file, true);
}

/** `fsyncDir` on libuv's thread pool: flushes of different directories overlap. */
export async function fsyncDirAsync(dir: string): Promise<void> {
  await syncPathAsync(dir, false);
}

async function syncPathAsync(target: string, dataOnly: boolean): Promise<void> {
  // Only the flush waits on the disk: open and close run here (microseconds each), so
  // the flush is one trip to the pool instead of three (each trip is two thread switches).
  // Opened so that nothing put in its place can block the flush: O_NONBLOCK (a FIFO; a
  // flush of one fails, and its caller falls back), O_NOFOLLOW for a file, O_DIRECTORY for a folder.
  const fd = dataOnly ? fs.openSync(target, FLUSH_FILE_FLAGS) : openDirectory(target);
  try {
    await syncFdAsync(fd, dataOnly);
  } finally {
    fs.closeSync(fd);
  }
}

/** `syncFd` on libuv's thread pool. Callbacks, not fs.promises: a FileHandle per message showed in the router's profile. */
export async function syncFdAsync(fd: number, dataOnly: boolean): Promise<void> {
  const delay = fsyncDelayMs();
  if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  await new Promise<void>((resolve, reject) => {
    const done = (err: NodeJS.ErrnoException | null) => (err ? reject(err) : resolve());
    if (dataOnly) fs.fdatasync(fd, done);
    else fs.fsync(fd, done);
  });
}

/** fsync (or fdatasync with `dataOnly`) a file descriptor. Every durable write goes through here. */
export function syncFd(fd: number, dataOnly = false): void {
  const delay = fsyncDelayMs();
  if (delay > 0) Atomics.wait(sleeper, 0, 0, delay);
  if (dataOnly) fs.fdatasyncSync(fd);
  else fs.fsyncSync(fd);
}

/**
 * `.tmp-<name>-<pid>-<thread><counter>`: the writer's pid lets the startup sweep tell a
 * temp file left by a dead process from one a live writer (a client, `hive send`) is
 * about to rename; thread id and a counter from a random start keep names unique
 * within the process. (A `randomBytes` call per file showed in an agent thread's profile
 * at saturation.)
 */
export function tempNameFor(target: string): string {
  tempCounter = (tempCounter + 1) >>> 0;
  return path.join(path.dirname(target), `${TMP_PREFIX}${path.basename(target)}-${process.pid}-${TEMP_THREAD}${tempCounter.toString(16).padStart(8, '0')}`);
}

const TEMP_THREAD = threadId.toString(16);
let tempCounter = randomBytes(4).readUInt32BE(0);

function writerAlive(tempName: string): boolean {
  const m = /-(\d+)-[0-9a-f]{8,}$/.exec(tempName);
  if (!m) return false;
  const pid = Number(m[1]);
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const FLUSH_FILE_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** Opens a folder to flush it: O_DIRECTORY (anything else fails with ENOTDIR) and O_NONBLOCK. */
function openDirectory(dir: string): number {
  return fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NONBLOCK);
}

/** fsync a directory so that renames and creations inside it are durable. */
export function fsyncDir(dir: string): void {
  const fd = openDirectory(dir);
  try {
    syncFd(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A temp file's open: never through a symlink (O_NOFOLLOW), never waiting on a FIFO
 * (O_NONBLOCK), a regular file only (fstat). Temp names are predictable, so something
 * planted at one (a link to a file outside the hive, which 'w' would have truncated and
 * written; a FIFO, which would have blocked the thread) is removed and the open tried once more.
 */
const TEMP_WRITE_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

function openTempFile(file: string, mode: number): number {
  try {
    return openRegularWith(file, TEMP_WRITE_FLAGS, mode).fd;
  } catch (err) {
    if (!(err instanceof HiveError && err.code === 'E_NOT_REGULAR')) throw err;
  }
  fs.rmSync(file, { force: true });
  return openRegularWith(file, TEMP_WRITE_FLAGS, mode).fd;
}

/** Creates `file` with `mode` exactly when one is given (fchmod: the umask cannot clear bits). */
function openForWrite(file: string, mode: number | undefined): number {
  const fd = openTempFile(file, mode ?? hiveModes().file);
  if (mode !== undefined) {
    try {
      fs.fchmodSync(fd, mode);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }
  return fd;
}

/** Writes a temp file the safe way `writeFileAtomic` does (flushed when `durable`), for callers that rename it themselves. */
export function writeTempFile(temp: string, data: string | Uint8Array, options: { durable?: boolean } = {}): void {
  writeAndSync(temp, data, options.durable ?? false);
}

function writeAndSync(file: string, data: string | Uint8Array, durable: boolean, mode?: number): void {
  const fd = openForWrite(file, mode);
  try {
    fs.writeFileSync(fd, data);
    if (durable) syncFd(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export interface WriteOptions {
  /** fsync file and directory (default true). false still renames atomically. */
  durable?: boolean;
  /** Permission bits of the created files, set exactly whatever the umask (default 0o644 minus the umask). */
  mode?: number;
}

/**
 * Atomically replaces `target` with `data`; durable when it returns (unless `durable: false`).
 * @example writeFileAtomic('/hive/registry.json', JSON.stringify(reg))
 */
export function writeFileAtomic(target: string, data: string | Uint8Array, options: WriteOptions = {}): void {
  const durable = options.durable ?? true;
  const tmp = tempNameFor(target);
  try {
    writeAndSync(tmp, data, durable);
    fs.renameSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  if (durable) fsyncDir(path.dirname(target));
}

export interface FileToWrite {
  name: string;
  data: string | Uint8Array;
}

/**
 * Group commit: writes every file of `files` into `dir` atomically and makes them all
 * durable with one directory fsync. Files become visible in array order.
 * A crash leaves a prefix of the batch renamed and the rest as temp files (swept at start).
 */
export function writeFilesAtomic(dir: string, files: FileToWrite[], options: WriteOptions = {}): void {
  const durable = options.durable ?? true;
  const temps: string[] = [];
  try {
    for (const f of files) {
      const tmp = tempNameFor(path.join(dir, f.name));
      temps.push(tmp);
      writeAndSync(tmp, f.data, durable, options.mode);
    }
    renameInOrder(dir, files, temps);
  } catch (err) {
    removeTemps(temps);
    throw err;
  }
  if (durable && files.length > 0) fsyncDir(dir);
}

/** Step 3 of a batch: each temp file takes its final name, in array order. */
function renameInOrder(dir: string, files: FileToWrite[], temps: string[]): void {
  for (let i = 0; i < files.length; i++) {
    fs.renameSync(temps[i]!, path.join(dir, files[i]!.name));
    temps[i] = ''; // renamed: nothing left to remove
  }
}

/** A failed batch removes the temp files it still holds. */
function removeTemps(temps: string[]): void {
  for (const t of temps) if (t) fs.rmSync(t, { force: true });
}

/**
 * `writeFilesAtomic`, durable, with the flushes issued together: every temp file is
 * written, then all are flushed at once on libuv's pool (the disk serves concurrent
 * flushes faster than the same flushes one after another), renamed in array order and
 * made durable with one directory fsync. Same crash outcomes as `writeFilesAtomic`.
 */
export async function writeFilesAtomicAsync(dir: string, files: FileToWrite[], options: Pick<WriteOptions, 'mode'> = {}): Promise<void> {
  const temps: string[] = [];
  try {
    // At most FLUSH_WINDOW descriptors open at once (a large batch must not hit EMFILE).
    for (let start = 0; start < files.length; start += FLUSH_WINDOW) {
      const fds: number[] = [];
      try {
        for (const f of files.slice(start, start + FLUSH_WINDOW)) {
          const tmp = tempNameFor(path.join(dir, f.name));
          temps.push(tmp);
          const fd = openForWrite(tmp, options.mode);
          fds.push(fd);
          fs.writeFileSync(fd, f.data);
        }
      } finally {
        // Every flush settles before its descriptor is closed (a closed number may be reused).
        const flushed = await Promise.allSettled(fds.map((fd) => syncFdAsync(fd, false)));
        for (const fd of fds) fs.closeSync(fd);
        const failed = flushed.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      }
    }
    renameInOrder(dir, files, temps);
  } catch (err) {
    removeTemps(temps);
    throw err;
  }
  if (files.length > 0) await fsyncDirAsync(dir);
}

/** Flushes one group commit issues at once (and descriptors it holds open). */
const FLUSH_WINDOW = 64;

/** Writes JSON atomically (pretty-printed, newline-terminated). */
export function writeJsonAtomic(target: string, value: unknown, options: WriteOptions = {}): void {
  writeFileAtomic(target, `${JSON.stringify(value, null, 2)}\n`, options);
}

/**
 * Creates `target` with `data` unless it exists: whole or not at all (a temp file
 * hard-linked into place), never over a file another writer made meanwhile. Not fsynced.
 * Returns true when this call created it.
 */
export function createFileOnce(target: string, data: string): boolean {
  if (fs.existsSync(target)) return false;
  const temp = tempNameFor(target);
  writeAndSync(temp, data, false);
  try {
    fs.linkSync(temp, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/**
 * Reads and parses a JSON file; `undefined` when it does not exist. Throws on invalid JSON,
 * and `E_NOT_REGULAR` for a symlink, FIFO or anything else that is not a regular file
 * (never opened: a FIFO put in place of registry.json must not block its reader).
 */
export function readJsonFile<T = unknown>(file: string): T | undefined {
  let text: string;
  try {
    text = readRegularText(file).text;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as T;
}

/**
 * Deletes temp files left in `dir` by a crash between steps 1 and 3. Files of a writer
 * that is still alive (another process of this host) are left alone. Returns the names.
 */
export function sweepTempFiles(dir: string, listed?: string[]): string[] {
  let names: string[];
  try {
    names = listed ?? fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  // Only what a writer could have left: a folder someone named like a temp file is not
  // ours (removing it failed the start), and one that cannot be removed does not stop it.
  const swept = names.filter((n) => {
    if (!n.startsWith(TMP_PREFIX) || writerAlive(n)) return false;
    try {
      if (fs.lstatSync(path.join(dir, n)).isDirectory()) return false;
      fs.rmSync(path.join(dir, n), { force: true });
      return true;
    } catch {
      return false;
    }
  });
  return swept;
}

/** readdir that answers [] for a missing folder. */
export function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
