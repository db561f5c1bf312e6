import fs from 'node:fs';
import os from 'node:os';
import lockfile from 'proper-lockfile';
import { hivePaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';

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

export interface LockOwner {
  pid: number;
  host: string;
  started_at: string;
  lock_ino: number;
}

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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(root: string): LockOwner | undefined {
  try {
    return readJsonFile<LockOwner>(hivePaths(root).lockOwner);
  } catch {
    return undefined;
  }
}

/** Removes the lock of a dead owner on this host. True when it did. */
function recoverDeadOwner(root: string): boolean {
  const p = hivePaths(root);
  const owner = readOwner(root);
  if (!owner || owner.host !== os.hostname() || owner.pid === process.pid || isAlive(owner.pid)) return false;
  let ino: number;
  try {
    ino = fs.statSync(p.lock).ino;
  } catch {
    return true; // already gone
  }
  if (ino !== owner.lock_ino) return false; // someone else holds a newer lock
  const grave = `${p.lock}.dead-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(p.lock, grave);
  } catch {
    return false;
  }
  fs.rmSync(grave, { recursive: true, force: true });
  return true;
}

/**
 * Takes `hive.lock` or throws `E_LOCKED` naming the holder's pid.
 * @example
 * const lock = await acquireHiveLock(root);
 * try { ... } finally { await lock.release(); }
 */
export async function acquireHiveLock(root: string, options: HiveLockOptions = {}): Promise<HiveLock> {
  const p = hivePaths(root);
  fs.mkdirSync(p.root, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      const release = await lockfile.lock(p.root, {
        lockfilePath: p.lock,
        stale: Math.max(2_000, options.stale ?? 5_000),
        retries: 0,
        realpath: false,
        onCompromised: (err) => {
          if (options.onCompromised) options.onCompromised(err);
        },
      });
      const owner: LockOwner = {
        pid: process.pid,
        host: os.hostname(),
        started_at: new Date().toISOString(),
        lock_ino: fs.statSync(p.lock).ino,
      };
      writeJsonAtomic(p.lockOwner, owner);
      return {
        owner,
        async release() {
          const current = readOwner(root);
          if (current?.pid === process.pid) fs.rmSync(p.lockOwner, { force: true });
          await release().catch(() => undefined);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
      if (attempt < 3 && recoverDeadOwner(root)) continue;
      const owner = readOwner(root);
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
  const owner = readOwner(root);
  if (!owner) return null;
  if (owner.host === os.hostname() && !isAlive(owner.pid)) return null;
  return owner;
}
