import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { HiveError } from '../errors.ts';
import { hiveModes } from './modes.ts';
import { syncFd } from './atomic.ts';
import { entryKind, openRegularWith } from './regular-file.ts';

/**
 * Files this thread has already checked for a torn tail. A line is torn only by a crash (or
 * a truncation) in the middle of an append; one O_APPEND write of a whole line is not torn
 * by a concurrent writer. So the check is needed once per file per thread (a restarted
 * worker or supervisor checks again), not on every append.
 */
const checked = new Set<string>();

/**
 * Read and write (the torn-tail check reads the last byte through the same descriptor),
 * appending, created when missing, never through a symlink (ELOOP), never waiting on a FIFO
 * (O_NONBLOCK: opened without waiting for a reader, then refused by the fstat below).
 */
const APPEND_FLAGS = fs.constants.O_RDWR | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/**
 * Opens a JSON-lines file of Hive's for appending, only if it is a regular file. A symlink,
 * FIFO or socket in its place is `E_NOT_REGULAR`, never written through or waited on: the
 * hive folder is shared, and `ln -s ~/.bashrc log.jsonl` must not make the hive append to
 * a file outside it, nor `mkfifo log.jsonl` block every thread that logs.
 */
export function openForAppend(file: string, where = file): { fd: number; size: number } {
  const { fd, stats } = openRegularWith(file, APPEND_FLAGS, hiveModes().file, where);
  return { fd, size: stats.size };
}

/** True when the open file is not empty and its last byte is not a newline. */
function endsTorn(fd: number, size: number): boolean {
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  fs.readSync(fd, last, 0, 1, size - 1);
  return last[0] !== 0x0a;
}

/**
 * Appends newline-terminated lines to a JSON-lines file. The first append of this thread
 * to a file whose last line was torn starts on a fresh line, so the torn line stays one
 * unreadable line (skipped by readers) instead of swallowing the next record.
 * `durable`: the line is flushed (fdatasync) before it returns. Throws `E_NOT_REGULAR`
 * when something other than a regular file has the file's name (see `openForAppend`).
 * @example appendLines(logFile, `${JSON.stringify(event)}\n`)
 */
export function appendLines(file: string, text: string, options: { durable?: boolean } = {}): void {
  const { fd, size } = openForAppend(file);
  try {
    if (!checked.has(file)) {
      if (endsTorn(fd, size)) text = `\n${text}`;
      if (checked.size >= 4_096) checked.clear();
      checked.add(file);
    }
    const bytes = Buffer.from(text);
    for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off);
    // Flushed before it returns: the line is on disk once the caller is told so.
    if (options.durable) syncFd(fd, true);
  } catch (err) {
    checked.delete(file); // a write cut short (a full disk) may have torn the tail: check again next time
    throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * `appendLines` to one of Hive's own files, at a name Hive chose (the event log, a session's
 * transcript): something else under that name (a symlink, a FIFO: the hive folder is
 * shared) is renamed aside to `<name>.not-a-file-<time>-<pid>` and the lines go to a new
 * file in its place. Returns what was moved aside, for the caller to report; null when
 * nothing was.
 */
export function appendLinesMovingAside(file: string, text: string, options: { durable?: boolean } = {}): { found: string; to: string } | null {
  try {
    appendLines(file, text, options);
    return null;
  } catch (err) {
    if (!(err instanceof HiveError && err.code === 'E_NOT_REGULAR')) throw err;
  }
  let moved: { found: string; to: string } | null = null;
  const aside = `${file}.not-a-file-${Date.now()}-${process.pid}-${threadId}`;
  try {
    const st = fs.lstatSync(file);
    // Another thread may have moved it aside already and begun a new file: that one stays.
    if (!st.isFile()) {
      fs.renameSync(file, aside);
      moved = { found: entryKind(st), to: path.basename(aside) };
    }
  } catch {
    // gone meanwhile: the append below makes a new file
  }
  appendLines(file, text, options);
  return moved;
}
