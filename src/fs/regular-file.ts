import fs from 'node:fs';
import { HiveError } from '../errors.ts';

/**
 * Files found in a hive are untrusted: people and other programs write into it. A queue
 * entry is read only when it is a regular file, and it is opened so that nothing else can
 * be reached through it:
 *
 *   - a queue entry's type comes from `readdir` (d_type), never from `stat`, so a symlink
 *     is seen as a symlink and its target is never read;
 *   - anything that is not a regular file (FIFO, socket, device, directory, symlink) is
 *     never opened: opening a FIFO blocks until a writer comes, a device may act on open;
 *   - a regular file is opened with O_NOFOLLOW | O_NONBLOCK and checked again with fstat,
 *     so one swapped for a link or a FIFO between the listing and the open is caught.
 */

export type EntryKind = 'file' | 'directory' | 'symbolic link' | 'FIFO (named pipe)' | 'socket' | 'block device' | 'character device' | 'unknown';

/** What a directory entry or stat result is, in words an operator reads in a reason file. */
export function entryKind(s: fs.Dirent | fs.Stats): EntryKind {
  if (s.isFile()) return 'file';
  if (s.isDirectory()) return 'directory';
  if (s.isSymbolicLink()) return 'symbolic link';
  if (s.isFIFO()) return 'FIFO (named pipe)';
  if (s.isSocket()) return 'socket';
  if (s.isBlockDevice()) return 'block device';
  if (s.isCharacterDevice()) return 'character device';
  return 'unknown';
}

/** The error for a queue entry that is not a regular file; `where` names it as the operator sees it. */
export function notRegularError(where: string, kind: EntryKind): HiveError {
  const article = /^[aeiouAEIOU]/.test(kind) ? 'an' : 'a';
  return new HiveError('E_NOT_REGULAR', `${where} is ${article} ${kind}, not a regular file: it was not opened or read`, { details: { kind } });
}

const READ_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/**
 * Opens `file` for reading only if it is a regular file (see above). `kind`: what the
 * caller knows from `readdir`; anything but a file is refused unopened. Without it (one of
 * Hive's own files, at a name Hive chose) the open itself is the check: O_NOFOLLOW fails on
 * a symlink, O_NONBLOCK keeps a FIFO from blocking, fstat refuses what is not a file (only
 * a device, which only root can make, would be opened). Throws `E_NOT_REGULAR`, or the
 * usual ENOENT when it is gone.
 */
export function openRegular(file: string, where = file, kind?: EntryKind): { fd: number; stats: fs.Stats } {
  if (kind !== undefined && kind !== 'file') throw notRegularError(where, kind);
  return openRegularWith(file, READ_FLAGS, undefined, where);
}

/**
 * `openRegular` with the caller's flags (which must include O_NOFOLLOW and O_NONBLOCK) and
 * creation mode: the appends to Hive's own files open this way for writing.
 */
export function openRegularWith(file: string, flags: number, mode: number | undefined, where = file): { fd: number; stats: fs.Stats } {
  let fd: number;
  try {
    fd = fs.openSync(file, flags, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Swapped between the listing and the open: ELOOP is a symlink now, ENXIO a socket.
    if (code === 'ELOOP') throw notRegularError(where, 'symbolic link');
    if (code === 'ENXIO') throw notRegularError(where, 'socket');
    throw err;
  }
  const stats = fs.fstatSync(fd);
  if (!stats.isFile()) {
    fs.closeSync(fd);
    throw notRegularError(where, entryKind(stats));
  }
  return { fd, stats };
}

/**
 * An open file's bytes, in one read when it is no longer than `size` (its size when opened):
 * 20,000 small files cost one read each. Reads until end of file (a read may return less:
 * files over 2 GiB, network filesystems), so one that grew since is read to its end.
 */
export function readOpenFile(fd: number, size: number): Buffer {
  const buf = Buffer.allocUnsafe(size + 1);
  let n = 0;
  for (let got = -1; got !== 0 && n <= size; n += got) got = fs.readSync(fd, buf, n, size + 1 - n, null);
  if (n <= size) return buf.subarray(0, n);
  return Buffer.concat([buf.subarray(0, n), fs.readFileSync(fd)]);
}

/**
 * Reads a regular file's text with its permission bits (one open, fstat, read, close).
 * @example const { text, mode } = readRegularText('/hive/agents/a/outbox/x.json');
 */
export function readRegularText(file: string, where = file, kind?: EntryKind): { text: string; mode: number } {
  const { fd, stats } = openRegular(file, where, kind);
  try {
    return { text: readOpenFile(fd, stats.size).toString('utf8'), mode: stats.mode & 0o7777 };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A regular file's bytes (a FIFO or symlink in its place is `E_NOT_REGULAR`, never opened):
 * for every file Hive reads back from a hive, which anyone may have replaced.
 * @example const wal = readRegularFile(agentPaths(root, id).stateWal);
 */
export function readRegularFile(file: string): Buffer;
export function readRegularFile(file: string, encoding: 'utf8'): string;
export function readRegularFile(file: string, encoding?: 'utf8'): Buffer | string {
  const { fd, stats } = openRegular(file);
  try {
    const data = readOpenFile(fd, stats.size);
    return encoding ? data.toString(encoding) : data;
  } finally {
    fs.closeSync(fd);
  }
}

/** `readdir` with entry types; [] for a missing folder. */
export function listEntries(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Throws `E_NOT_REGULAR` when `dir` exists but is not a real folder: a symlink (even to a
 * folder: files moved into it would land, and be trimmed, outside the hive), a file, a
 * FIFO. A missing folder is fine (its writer makes it).
 */
export function assertRealDirectory(dir: string, where = dir): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (st.isDirectory()) return;
  const kind = entryKind(st);
  throw new HiveError('E_NOT_REGULAR', `${where} is ${/^[aeiouAEIOU]/.test(kind) ? 'an' : 'a'} ${kind}, not a folder: it is not used`, { details: { kind } });
}

/** True when `dir` is a real directory (lstat: a symlink to one is not). */
export function isRealDirectory(dir: string): boolean {
  try {
    // throwIfNoEntry: a missing folder (an agent with no send log) is common on the message
    // path, and an ENOENT error object costs more than the lstat (perf of bench:peers).
    return fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}

/**
 * The names in `dir` that are real folders, from readdir's entry types (no call per entry):
 * a symlink to a folder is not one. [] when `dir` is missing.
 * @example realSubfolders(hivePaths(root).agents) // agent folders, symlinked ones left out
 */
export function realSubfolders(dir: string): string[] {
  return listEntries(dir)
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
}
