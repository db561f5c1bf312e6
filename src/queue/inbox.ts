import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import lockfile from 'proper-lockfile';
import { agentPaths, type AgentPaths } from '../layout/paths.ts';
import { listDir, writeFilesAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import { parseMessageText, type HiveMessage } from '../protocol/message.ts';
import { encodeMessage, trimFolder } from './outbox.ts';
import { readCursor } from './cursor.ts';
import { recoverDeadLock, writeOwner } from '../lock/owner.ts';

/**
 * The inbox: `agents/<id>/inbox/<seq>-<id>.json`, seq zero-padded to 12 digits,
 * gap-free and assigned under the inbox lock (`inbox/.lock`, proper-lockfile).
 * Processed entries move to `inbox/.done/` (capped), so ids stay visible to the
 * idempotency check for a while after processing.
 *
 * deliver(batch), under the lock:
 *   1. learn the last seq and the known ids (cached; `inbox/.head` tells whether
 *      another process delivered since: a token rewritten by every batch)
 *   2. skip ids already present (reported `duplicate`), number the rest lastSeq+1...
 *   3. temp file + fsync per message, renames in seq order, one directory fsync
 *   4. rewrite `.head`, release the lock
 * A crash in step 3 leaves a renamed prefix of the batch plus temp files (swept at
 * start); the next delivery re-reads the folder, so numbering stays gap-free.
 * A crash after 3 but before the caller recorded success makes the caller retry:
 * the ids are found in step 2 and reported `duplicate`. Nothing is delivered twice.
 */

export const SEQ_WIDTH = 12;
const INBOX_NAME = /^(\d{12})-([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.json$/;
export const DEFAULT_DONE_CAP = 5_000;

export function inboxFileName(seq: number, id: string): string {
  return `${String(seq).padStart(SEQ_WIDTH, '0')}-${id}.json`;
}

export function parseInboxName(name: string): { seq: number; id: string } | null {
  const m = INBOX_NAME.exec(name);
  return m ? { seq: Number(m[1]), id: m[2]! } : null;
}

export type DeliveryOutcome =
  | { id: string; status: 'delivered'; seq: number }
  | { id: string; status: 'duplicate' };

interface InboxIndex {
  token: string;
  lastSeq: number;
  ids: Set<string>;
}

/** Per-process cache of each inbox's last seq and known ids, keyed by inbox folder. */
const indexCache = new Map<string, InboxIndex>();

function readHead(p: AgentPaths): string | null {
  try {
    return fs.readFileSync(p.inboxHead, 'utf8');
  } catch {
    return null;
  }
}

function loadIndex(root: string, p: AgentPaths): InboxIndex {
  const head = readHead(p);
  const cached = indexCache.get(p.inbox);
  if (cached && head !== null && cached.token === head) return cached;
  let lastSeq = 0;
  try {
    lastSeq = readCursor(root, p.id);
  } catch {
    // A damaged cursor must not stop delivery; the folder listing still gives a floor.
  }
  const ids = new Set<string>();
  const parsed = [...listDir(p.done), ...listDir(p.inbox)]
    .map(parseInboxName)
    .filter((x): x is { seq: number; id: string } => x !== null)
    .sort((a, b) => a.seq - b.seq);
  for (const { seq, id } of parsed) {
    ids.add(id);
    if (seq > lastSeq) lastSeq = seq;
  }
  const index = { token: head ?? '', lastSeq, ids };
  indexCache.set(p.inbox, index);
  return index;
}

function rememberId(index: InboxIndex, id: string, doneCap: number): void {
  index.ids.add(id);
  // Bound memory: forget the oldest ids once far beyond what .done can still show.
  if (index.ids.size > doneCap * 2 + 1_000) {
    let drop = index.ids.size - doneCap * 2;
    for (const old of index.ids) {
      if (drop-- <= 0) break;
      index.ids.delete(old);
    }
  }
}

export interface LockOptions {
  /** ms after which a lock whose holder stopped refreshing it is broken (min 2000). */
  stale?: number;
  /**
   * Keep the lock this many ms after the last use (a lease). Creating and removing
   * the lock folder costs about 1 ms on a journaling filesystem, more than the write
   * it protects; a deliverer under load keeps the lease and pays it once. 0 releases
   * at once. Default 200.
   */
  holdMs?: number;
}

/**
 * An inbox lock held by this process: an in-process queue (one delivery at a time
 * per inbox) in front of proper-lockfile's cross-process lock, kept for `holdMs`
 * after the last use.
 */
class InboxLease {
  private tail: Promise<void> = Promise.resolve();
  private release: (() => Promise<void>) | null = null;
  private idle: NodeJS.Timeout | null = null;

  constructor(private readonly p: AgentPaths) {}

  async run<T>(fn: () => T, options: LockOptions): Promise<T> {
    const previous = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => (done = resolve));
    await previous;
    try {
      if (this.idle) clearTimeout(this.idle);
      this.idle = null;
      if (!this.release) await this.acquire(options);
      return fn();
    } finally {
      const holdMs = options.holdMs ?? 200;
      if (holdMs <= 0) await this.drop();
      else {
        this.idle = setTimeout(() => void this.drop(), holdMs);
        this.idle.unref();
      }
      done();
    }
  }

  private async acquire(options: LockOptions): Promise<void> {
    // A lock left by a SIGKILLed deliverer of this host is taken over at once.
    recoverDeadLock(this.p.inboxLock, this.p.inboxLockOwner);
    const release = await lockfile.lock(this.p.inbox, {
      lockfilePath: this.p.inboxLock,
      stale: options.stale ?? 5_000,
      realpath: false,
      retries: { retries: 2_000, factor: 1.2, minTimeout: 1, maxTimeout: 25 },
      onCompromised: () => {
        // Someone broke our lock (we stalled past `stale`): forget it and what we cached.
        this.release = null;
        indexCache.delete(this.p.inbox);
      },
    });
    writeOwner(this.p.inboxLock, this.p.inboxLockOwner, false);
    this.release = release;
  }

  async drop(): Promise<void> {
    const release = this.release;
    this.release = null;
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    if (release) await release().catch(() => undefined);
  }
}

const leases = new Map<string, InboxLease>();

/** Runs `fn` holding the inbox lock of `agentId`. */
export async function withInboxLock<T>(root: string, agentId: string, fn: () => T, options: LockOptions = {}): Promise<T> {
  const p = agentPaths(root, agentId);
  if (!fs.existsSync(p.inbox)) {
    throw new HiveError('E_UNKNOWN_AGENT', `Agent "${agentId}" has no inbox at ${p.inbox}; create it with ensureAgent or \`hive spawn\``);
  }
  let lease = leases.get(p.inbox);
  if (!lease) {
    lease = new InboxLease(p);
    leases.set(p.inbox, lease);
  }
  return lease.run(fn, options);
}

/** Releases every inbox lock this process holds (call before exiting or handing over). */
export async function releaseInboxLocks(): Promise<void> {
  const all = [...leases.values()];
  leases.clear();
  await Promise.all(all.map((l) => l.drop()));
}

export interface DeliverOptions extends LockOptions {
  doneCap?: number;
}

/**
 * Delivers messages into one agent's inbox with gap-free sequence numbers and one
 * directory fsync for the batch. Idempotent on message id.
 * @example
 * const [r] = await deliver(root, 'bob', [msg]); // { id, status: 'delivered', seq: 1 }
 * await deliver(root, 'bob', [msg]);            // [{ id, status: 'duplicate' }]
 */
export async function deliver(
  root: string,
  agentId: string,
  messages: HiveMessage[],
  options: DeliverOptions = {},
): Promise<DeliveryOutcome[]> {
  const p = agentPaths(root, agentId);
  const doneCap = options.doneCap ?? DEFAULT_DONE_CAP;
  return withInboxLock(
    root,
    agentId,
    () => {
      const index = loadIndex(root, p);
      const outcomes: DeliveryOutcome[] = [];
      const files: { name: string; data: string }[] = [];
      const fresh = new Set<string>();
      let seq = index.lastSeq;
      for (const m of messages) {
        if (index.ids.has(m.id) || fresh.has(m.id)) {
          outcomes.push({ id: m.id, status: 'duplicate' });
          continue;
        }
        seq += 1;
        fresh.add(m.id);
        files.push({ name: inboxFileName(seq, m.id), data: encodeMessage(m) });
        outcomes.push({ id: m.id, status: 'delivered', seq });
      }
      if (files.length === 0) return outcomes;
      try {
        writeFilesAtomic(p.inbox, files);
      } catch (err) {
        indexCache.delete(p.inbox);
        throw err;
      }
      index.lastSeq = seq;
      for (const id of fresh) rememberId(index, id, doneCap);
      index.token = `${seq} ${process.pid} ${randomBytes(6).toString('hex')}`;
      fs.writeFileSync(p.inboxHead, index.token);
      return outcomes;
    },
    options,
  );
}

export interface InboxEntry {
  seq: number;
  id: string;
  name: string;
  file: string;
  message: HiveMessage;
}

export interface RejectedInboxFile {
  name: string;
  file: string;
  seq: number | null;
  error: HiveError;
}

export interface InboxRead {
  entries: InboxEntry[];
  /** Files that are not valid inbox entries (bad name or bad content): dead-letter them. */
  rejected: RejectedInboxFile[];
}

/**
 * Reads pending entries with seq > `afterSeq`, in seq order.
 * @example const { entries } = readInbox(root, 'bob', readCursor(root, 'bob'));
 */
export function readInbox(root: string, agentId: string, afterSeq: number, limit = Infinity): InboxRead {
  const p = agentPaths(root, agentId);
  const entries: InboxEntry[] = [];
  const rejected: RejectedInboxFile[] = [];
  const named: { seq: number; id: string; name: string }[] = [];
  for (const name of listDir(p.inbox)) {
    if (name.startsWith('.')) continue;
    const parsedName = parseInboxName(name);
    if (!parsedName) {
      rejected.push({
        name,
        file: path.join(p.inbox, name),
        seq: null,
        error: new HiveError('E_BAD_MESSAGE', `Inbox file name "${name}" is not <12-digit seq>-<message id>.json`),
      });
      continue;
    }
    if (parsedName.seq > afterSeq) named.push({ ...parsedName, name });
  }
  named.sort((a, b) => a.seq - b.seq);
  for (const n of named) {
    if (entries.length >= limit) break;
    const file = path.join(p.inbox, n.name);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const parsed = parseMessageText(text);
    if (!parsed.ok) {
      rejected.push({ name: n.name, file, seq: n.seq, error: parsed.error });
    } else if (parsed.message.id !== n.id) {
      rejected.push({
        name: n.name,
        file,
        seq: n.seq,
        error: new HiveError('E_BAD_MESSAGE', `Inbox file "${n.name}" holds message id "${parsed.message.id}", not "${n.id}"`),
      });
    } else {
      entries.push({ seq: n.seq, id: n.id, name: n.name, file, message: parsed.message });
    }
  }
  return { entries, rejected };
}

/** Every entry of an inbox, pending and done, for display (`hive inbox`). */
export function listInbox(root: string, agentId: string): { seq: number; id: string; name: string; done: boolean }[] {
  const p = agentPaths(root, agentId);
  const rows: { seq: number; id: string; name: string; done: boolean }[] = [];
  for (const [dir, done] of [[p.done, true], [p.inbox, false]] as const) {
    for (const name of listDir(dir)) {
      const parsed = parseInboxName(name);
      if (parsed) rows.push({ ...parsed, name, done });
    }
  }
  return rows.sort((a, b) => a.seq - b.seq);
}

/** Reads one inbox entry by name from the pending or the done folder. */
export function readInboxEntry(root: string, agentId: string, name: string): HiveMessage | null {
  const p = agentPaths(root, agentId);
  for (const dir of [p.inbox, p.done]) {
    try {
      const parsed = parseMessageText(fs.readFileSync(path.join(dir, name), 'utf8'));
      if (parsed.ok) return parsed.message;
    } catch {
      // try the next folder
    }
  }
  return null;
}

/**
 * Moves processed entries (seq ≤ `throughSeq`) to `inbox/.done/` and trims it to `cap`.
 * Not fsynced: an entry whose move is lost reappears with seq ≤ cursor and is moved again.
 */
export function moveToDone(root: string, agentId: string, throughSeq: number, cap = DEFAULT_DONE_CAP): number {
  const p = agentPaths(root, agentId);
  fs.mkdirSync(p.done, { recursive: true });
  let moved = 0;
  for (const name of listDir(p.inbox)) {
    const parsed = parseInboxName(name);
    if (!parsed || parsed.seq > throughSeq) continue;
    try {
      fs.renameSync(path.join(p.inbox, name), path.join(p.done, name));
      moved += 1;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  if (moved > 0) trimFolder(p.done, cap);
  return moved;
}

/** Number of pending entries after `afterSeq` (the inbox depth). */
export function inboxDepth(root: string, agentId: string, afterSeq: number): number {
  let n = 0;
  for (const name of listDir(agentPaths(root, agentId).inbox)) {
    const parsed = parseInboxName(name);
    if (parsed && parsed.seq > afterSeq) n += 1;
  }
  return n;
}

/** Forget cached inbox indexes (tests, or after a folder was replaced by hand). */
export function resetInboxCache(): void {
  indexCache.clear();
}
