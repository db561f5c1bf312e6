import fs from 'node:fs';
import os from 'node:os';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';

/**
 * Owner records beside mkdir locks, so a lock whose process was SIGKILLed can be taken
 * over at once instead of after proper-lockfile's stale time. The record names the
 * lock folder's inode: a recovering process removes the folder only while it is still
 * the one the dead owner made, so two recovering processes cannot both win.
 */
export interface LockOwner {
  pid: number;
  host: string;
  started_at: string;
  lock_ino: number;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readOwner(ownerFile: string): LockOwner | undefined {
  try {
    return readJsonFile<LockOwner>(ownerFile);
  } catch {
    return undefined;
  }
}

/** Writes the owner record for a lock folder this process just created. */
export function writeOwner(lockDir: string, ownerFile: string, durable: boolean): LockOwner {
  const owner: LockOwner = {
    pid: process.pid,
    host: os.hostname(),
    started_at: new Date().toISOString(),
    lock_ino: fs.statSync(lockDir).ino,
  };
  writeJsonAtomic(ownerFile, owner, { durable });
  return owner;
}

/** The owner is a process of this host that no longer exists. */
export function isDeadOwner(owner: LockOwner | undefined): owner is LockOwner {
  return owner !== undefined && owner.host === os.hostname() && owner.pid !== process.pid && !isAlive(owner.pid);
}

/** Removes a lock folder left by a dead process of this host. True when the lock is gone. */
export function recoverDeadLock(lockDir: string, ownerFile: string): boolean {
  const owner = readOwner(ownerFile);
  if (!isDeadOwner(owner)) return false;
  let ino: number;
  try {
    ino = fs.statSync(lockDir).ino;
  } catch {
    return true;
  }
  if (ino !== owner.lock_ino) return false;
  const grave = `${lockDir}.dead-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(lockDir, grave);
  } catch {
    return false;
  }
  fs.rmSync(grave, { recursive: true, force: true });
  return true;
}
