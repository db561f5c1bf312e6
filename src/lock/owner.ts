import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { hiveModes } from '../fs/modes.ts';

/**
 * Owner records beside mkdir locks, so a lock whose process was SIGKILLed can be taken
 * over at once instead of after proper-lockfile's stale time. The record names the
 * lock folder's inode: a recovering process removes the folder only while it is still
 * the one the dead owner made, so two recovering processes cannot both win.
 *
 * The record can only be written after the folder exists, so a process killed between
 * proper-lockfile's mkdir and the record leaves a folder nobody is named for (seen in
 * ~1 of 3 supervisor SIGKILLs under traffic: the new router then waited out the 5 s
 * stale time). Closing that window: before it tries to lock, a process leaves an intent
 * marker `<lock>.intent-<pid>-<thread>` beside the folder and removes it once its record
 * is written. A folder with no matching record whose only intents belong to dead
 * processes was made by one of them.
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

const INTENT = '.intent-';

/**
 * Takes a mkdir lock and names this process as its owner: leaves the intent marker,
 * takes over a folder a dead process left, runs `lock` (proper-lockfile with the
 * caller's options), writes the owner record, removes the marker. Every lock with an
 * owner record goes through here, so the record and its marker cannot drift apart.
 */
export async function lockWithOwner<R>(lockDir: string, ownerFile: string, lock: () => Promise<R>, options: { durable?: boolean } = {}): Promise<{ release: R; owner: LockOwner }> {
  const marker = `${lockDir}${INTENT}${process.pid}-${threadId}`;
  try {
    // Never through a symlink (O_NOFOLLOW: one planted at this name would truncate its target).
    fs.closeSync(fs.openSync(marker, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, hiveModes().file));
  } catch {
    // No marker (read-only folder?): recovery falls back to the stale time.
  }
  try {
    recoverDeadLock(lockDir, ownerFile);
    const release = await lock();
    return { release, owner: writeOwner(lockDir, ownerFile, options.durable ?? false) };
  } finally {
    fs.rmSync(marker, { force: true });
  }
}

/** A folder's entry names; [] when it cannot be read (gone, not a folder). */
function namesIn(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** The intent markers beside `lockDir` other than this thread's own, with their pids. */
function otherIntents(lockDir: string): { file: string; pid: number }[] {
  const dir = path.dirname(lockDir);
  const prefix = `${path.basename(lockDir)}${INTENT}`;
  const mine = `${prefix}${process.pid}-${threadId}`;
  return namesIn(dir)
    .filter((n) => n.startsWith(prefix) && n !== mine)
    .map((n) => ({ file: path.join(dir, n), pid: Number.parseInt(n.slice(prefix.length), 10) }));
}

const isDeadPid = (pid: number) => Number.isInteger(pid) && pid > 0 && !isAlive(pid);

/** `<lock>.intent-<pid>-<thread>` → its parts; null for any other name. */
export function parseIntentName(name: string): { lock: string; pid: number; thread: number } | null {
  const m = /^(.+)\.intent-(\d+)-(\d+)$/.exec(name);
  return m ? { lock: m[1]!, pid: Number(m[2]), thread: Number(m[3]) } : null;
}

/**
 * True when the intents beside `lockDir` show that a dead process made it: at least one
 * intent of another process, all of them dead (their markers are removed). Another
 * thread of this process counts as alive.
 */
function madeByDeadProcess(lockDir: string): boolean {
  const others = otherIntents(lockDir);
  if (others.length === 0 || !others.every((x) => isDeadPid(x.pid))) return false;
  for (const x of others) fs.rmSync(x.file, { force: true });
  return true;
}

/** Intent markers of other processes beside `lockDir` whose process is dead. */
function deadIntents(lockDir: string): string[] {
  return otherIntents(lockDir)
    .filter((x) => x.pid !== process.pid && isDeadPid(x.pid))
    .map((x) => x.file);
}

/**
 * Startup sweep: intent markers of dead processes in `dir` that have no lock folder beside
 * them (a kill before the lock was taken). One beside an existing lock folder stays: it is
 * what lets that folder be taken over at once. Returns the names removed.
 */
export function sweepDeadIntents(dir: string, listed?: string[]): string[] {
  const names = listed ?? namesIn(dir);
  const swept: string[] = [];
  for (const n of names) {
    const intent = parseIntentName(n);
    if (!intent || names.includes(intent.lock) || intent.pid === process.pid || !isDeadPid(intent.pid)) continue;
    fs.rmSync(path.join(dir, n), { force: true });
    swept.push(n);
  }
  return swept;
}

/**
 * After a worker thread of this process died unexpectedly: removes its intent markers
 * (`.intent-<pid>-<thread>`) in the places locks live (the hive root, the palace, each
 * agent folder, each inbox). Its process lives on, so the startup sweep, which looks for dead processes,
 * would never take them, and beside a lock folder they would count as a live intent
 * (another thread of a live process) and hold up its take-over. Returns the count.
 */
export function sweepThreadIntents(root: string, pid: number, thread: number): number {
  const agents = path.join(root, 'agents');
  let removed = 0;
  for (const dir of [root, path.join(root, 'palace'), ...namesIn(agents).flatMap((id) => [path.join(agents, id), path.join(agents, id, 'inbox')])]) {
    const names = namesIn(dir);
    for (const n of names) {
      const intent = parseIntentName(n);
      if (intent?.pid !== pid || intent.thread !== thread) continue;
      fs.rmSync(path.join(dir, n), { force: true });
      removed += 1;
    }
  }
  return removed;
}

/** Removes a lock folder left by a dead process of this host. True when the lock is gone. */
export function recoverDeadLock(lockDir: string, ownerFile: string): boolean {
  const owner = readOwner(ownerFile);
  let ino: number;
  try {
    ino = fs.statSync(lockDir).ino;
  } catch {
    return isDeadOwner(owner);
  }
  const namedOwnerDead = isDeadOwner(owner) && ino === owner.lock_ino;
  const namedOwnerHolds = owner !== undefined && ino === owner.lock_ino && !namedOwnerDead;
  if (!namedOwnerDead && (namedOwnerHolds || !madeByDeadProcess(lockDir))) return false;
  const grave = `${lockDir}.dead-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(lockDir, grave);
  } catch {
    return false;
  }
  fs.rmSync(grave, { recursive: true, force: true });
  // The dead takers' intents go with their lock (left behind, they would outlive it).
  for (const file of deadIntents(lockDir)) fs.rmSync(file, { force: true });
  return true;
}
