import fs from 'node:fs';
import { hiveModes } from './modes.ts';
import { syncFd } from './atomic.ts';

/**
 * Files this thread has already checked for a torn tail. A line is torn only by a crash (or
 * a truncation) in the middle of an append; one O_APPEND write of a whole line is not torn
 * by a concurrent writer. So the check is needed once per file per thread (a restarted
 * worker or supervisor checks again), not on every append.
 */
const checked = new Set<string>();

/** True when the file exists, is not empty and its last byte is not a newline. */
function endsTorn(file: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return false; // not there yet: nothing to tear
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Appends newline-terminated lines to a JSON-lines file. The first append of this thread
 * to a file whose last line was torn starts on a fresh line, so the torn line stays one
 * unreadable line (skipped by readers) instead of swallowing the next record.
 * `durable`: the line is flushed (fdatasync) before it returns.
 * @example appendLines(logFile, `${JSON.stringify(event)}\n`)
 */
export function appendLines(file: string, text: string, options: { durable?: boolean } = {}): void {
  if (!checked.has(file)) {
    if (endsTorn(file)) text = `\n${text}`;
    if (checked.size >= 4_096) checked.clear();
    checked.add(file);
  }
  try {
    if (!options.durable) fs.appendFileSync(file, text, { mode: hiveModes().file });
    else {
      // Flushed before it returns: the line is on disk once the caller is told so.
      const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, hiveModes().file);
      try {
        fs.writeSync(fd, text);
        syncFd(fd, true);
      } finally {
        fs.closeSync(fd);
      }
    }
  } catch (err) {
    checked.delete(file); // a write cut short (a full disk) may have torn the tail: check again next time
    throw err;
  }
}
