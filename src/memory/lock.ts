import path from 'node:path';
import lockfile from 'proper-lockfile';
import { HiveError } from '../errors.ts';
import { lockWithOwner } from '../lock/owner.ts';
import { makeDir } from '../fs/modes.ts';
import { lockFs } from '../lock/lock-fs.ts';

/**
 * The lock of one file that several processes append to or replace (memory.md, the
 * palace manifest). proper-lockfile's mkdir lock `<dir>/.<name>.lock` plus an owner
 * record, so a lock left by a SIGKILLed process of this host is taken over at once
 * (the reflector killed in the middle of its swap must not block `remember` for the
 * stale time). In front of it, an in-process queue: proper-lockfile is not reentrant
 * and two callers in one process would otherwise spin on each other's lock.
 */

const queues = new Map<string, Promise<unknown>>();

export interface FileLockOptions {
  /** ms without refresh after which another host's process may break the lock (min 2000). */
  stale?: number;
  /** How long to wait for the lock before giving up with E_LOCKED (default 30 s). */
  waitMs?: number;
}

function lockPaths(file: string): { dir: string; owner: string } {
  const dir = path.join(path.dirname(file), `.${path.basename(file)}.lock`);
  return { dir, owner: `${dir}.json` };
}

async function acquire(file: string, options: FileLockOptions): Promise<() => Promise<void>> {
  const { dir, owner } = lockPaths(file);
  const deadline = Date.now() + (options.waitMs ?? 30_000);
  for (let delay = 1; ; delay = Math.min(delay * 2, 25)) {
    try {
      const { release } = await lockWithOwner(dir, owner, () =>
        lockfile.lock(file, { fs: lockFs, lockfilePath: dir, stale: Math.max(2_000, options.stale ?? 10_000), realpath: false, retries: 0 }),
      );
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
      if (Date.now() > deadline) {
        throw new HiveError('E_LOCKED', `Lock ${dir} is still held after ${options.waitMs ?? 30_000} ms; is a process stuck holding it?`);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/**
 * Runs `fn` while holding the lock of `file` (the file need not exist).
 * @example await withFileLock(memoryFile, () => fs.appendFileSync(memoryFile, text));
 */
export async function withFileLock<T>(file: string, fn: () => T | Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const key = path.resolve(file);
  const previous = queues.get(key) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  const tail = previous.then(() => mine);
  queues.set(key, tail);
  await previous;
  try {
    makeDir(path.dirname(key));
    const release = await acquire(key, options);
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
    }
  } finally {
    done();
    if (queues.get(key) === tail) queues.delete(key);
  }
}
