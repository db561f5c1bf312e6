import fs from 'node:fs';
import os from 'node:os';
import lockfile from 'proper-lockfile';
import { hivePaths } from '../layout/paths.ts';
import { HiveError } from '../errors.ts';
import { isAlive, lockWithOwner, readOwner, recoverDeadLock, type LockOwner } from './owner.ts';
import { makeDir } from '../fs/modes.ts';
import { lockFs } from './lock-fs.ts';

/** ms after which a hive.lock whose holder stopped refreshing it is broken (a dead holder's is taken over at once). */
export const HIVE_LOCK_STALE_MS = 5_000;

/**
 * `hive.lock`: one owner per hive root. The lock itself is proper-lockfile's
 * mkdir lock (refreshed while held, broken after `stale` ms without refresh); beside
 * it `hive.lock.json` names the owner `{ pid, host, started_at, lock_ino }`.
 *
 * A lock whose owner was SIGKILLed is recovered two ways:
 *   - same host and the owner pid is gone: at once (the lock dir is renamed away,
 *     but only if its inode is still the one the dead owner recorded, so two
 *     recovering processes cannot both win);
 *   - otherwise proper-lockfile breaks it once its mtime is `stale` ms old.
 */

export type { LockOwner };

export interface HiveLock {
  owner: LockOwner;
  release(): Promise<void>;
}

export interface HiveLockOptions {
  /** ms without refresh after which another process may break the lock (default 5000, min 2000). */
  stale?: number;
  /** Called when the lock was lost while held (its folder removed or refresh failed). */
  onCompromised?: (err: Error) => void;
}

/**
 * Takes `hive.lock` or throws `E_LOCKED` naming the holder's pid.
 * @example
 * const lock = await acquireHiveLock(root);
 * try { ... } finally { await lock.release(); }
 */
export async function acquireHiveLock(root: string, options: HiveLockOptions = {}): Promise<HiveLock> {
  const p = hivePaths(root);
  makeDir(p.root);
  for (let attempt = 0; ; attempt++) {
    try {
      const { release, owner } = await lockWithOwner(
        p.lock,
        p.lockOwner,
        () =>
          lockfile.lock(p.root, {
            fs: lockFs,
            lockfilePath: p.lock,
            stale: Math.max(2_000, options.stale ?? HIVE_LOCK_STALE_MS),
            retries: 0,
            realpath: false,
            onCompromised: (err) => {
              if (options.onCompromised) options.onCompromised(err);
            },
          }),
        { durable: true },
      );
      return {
        owner,
        async release() {
          const current = readOwner(p.lockOwner);
          if (current?.pid === process.pid) fs.rmSync(p.lockOwner, { force: true });
          await release().catch(() => undefined);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
      if (attempt < 3 && recoverDeadLock(p.lock, p.lockOwner)) continue;
      const owner = readOwner(p.lockOwner);
      const who = owner ? `pid ${owner.pid} on ${owner.host} since ${owner.started_at}` : 'an unknown process';
      throw new HiveError(
        'E_LOCKED',
        `Hive ${p.root} is owned by ${who}. Stop that process first; a lock left by a killed process is recovered within a few seconds.`,
        { details: { pid: owner?.pid ?? null, host: owner?.host ?? null } },
      );
    }
  }
}

/** The current owner of a hive, or null when nobody (alive) holds it. */
export function hiveLockOwner(root: string): LockOwner | null {
  const p = hivePaths(root);
  if (!fs.existsSync(p.lock)) return null;
  const owner = readOwner(p.lockOwner);
  if (!owner) return null;
  if (owner.host === os.hostname() && !isAlive(owner.pid)) return null;
  return owner;
}
