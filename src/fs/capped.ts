import fs from 'node:fs';
import path from 'node:path';
import { listDir } from './atomic.ts';

/**
 * Caps on folders that only grow (`outbox/.sent/`), enforced on write.
 * Listing and sorting a folder of thousands of names on every move costs more than the
 * move, so this keeps a per-process count and trims (oldest names first) only when the
 * folder is 10% over its cap: at most `cap * 1.1 + 16` entries, amortized O(1) a move.
 */
const counts = new Map<string, number>();

export function trimFolder(dir: string, cap: number): void {
  const names = listDir(dir).filter((n) => !n.startsWith('.'));
  if (names.length > cap) {
    names.sort();
    for (const n of names.slice(0, names.length - cap)) removeEntry(path.join(dir, n));
  }
  counts.set(dir, Math.min(names.length, cap));
}

/**
 * One unlink for a file (the common case); a folder (someone put one there) is removed
 * with its contents. `rmSync({ recursive })` on every file cost an extra lstat each.
 */
function removeEntry(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'EISDIR' || code === 'EPERM') fs.rmSync(file, { force: true, recursive: true });
    else throw err;
  }
}

/** Records `added` new entries in `dir` and trims it when it is well over `cap`. */
export function noteAdded(dir: string, added: number, cap: number): void {
  let count = counts.get(dir);
  if (count === undefined) {
    trimFolder(dir, cap);
    return;
  }
  count += added;
  counts.set(dir, count);
  if (count > cap + Math.ceil(cap / 10) + 16) trimFolder(dir, cap);
}
