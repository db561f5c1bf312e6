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

/**
 * Records `added` new entries in `dir` and trims it when it is well over `cap`. With
 * `deferTo` (a ceiling above `cap`), a folder between the two is only noted, and trimmed
 * later by `trimDeferred`, when its owner has nothing better to do: unlinking a file frees
 * its inode and blocks, and on a busy message path those frees held up the writers of new
 * files in the same folders (docs/architecture.md, "Inbox logs").
 */
export function noteAdded(dir: string, added: number, cap: number, deferTo?: number): void {
  let count = counts.get(dir);
  if (count === undefined) {
    trimFolder(dir, cap);
    return;
  }
  count += added;
  counts.set(dir, count);
  const over = cap + Math.ceil(cap / 10) + 16;
  if (count <= over) return;
  if (deferTo !== undefined && count <= Math.max(deferTo, over)) deferred.set(dir, cap);
  else {
    deferred.delete(dir);
    trimFolder(dir, cap);
  }
}

/** Folders over their cap whose trim waits (see noteAdded), with their caps. */
const deferred = new Map<string, number>();

/** Trims the folders waiting for it, at most `maxFolders` of them; returns how many still wait. */
export function trimDeferred(maxFolders = Infinity): number {
  let n = 0;
  for (const [dir, cap] of deferred) {
    if (n++ >= maxFolders) break;
    deferred.delete(dir);
    try {
      trimFolder(dir, cap);
    } catch {
      // gone or replaced: its next write notes it again
    }
  }
  return deferred.size;
}
