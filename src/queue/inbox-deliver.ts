// Long on purpose: delivery is one crash-ordered sequence (lock, link, flush, index, release:
// docs/architecture.md, "Delivery"), read best from top to bottom in one file.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import lockfile from 'proper-lockfile';
import { agentPaths, type AgentPaths } from '../layout/paths.ts';
import { fsyncDirAsync, listDir, syncFd, syncFileAsync, tempNameFor } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { encodeMessage } from './outbox.ts';
import { readCursor } from './cursor.ts';
import { DEFAULT_DONE_CAP, inboxFileName, parseInboxName } from './inbox.ts';
import { lockWithOwner } from '../lock/owner.ts';
import { MarkerFile } from '../fs/marker.ts';
import { isRealDirectory, readRegularFile } from '../fs/regular-file.ts';
import { hiveModes } from '../fs/modes.ts';
import { lockFs } from '../lock/lock-fs.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { plantActive } from '../testing/seams.ts';

/**
 * Delivery into an inbox: gap-free sequence numbers assigned under the inbox lock
 * (`inbox/.lock`, proper-lockfile), idempotent on message id, one directory fsync per batch.
 *
 * deliver(batch), under the lock:
 *   1. learn the last seq and the known ids (cached; `inbox/.head` holds a token every
 *      batch rewrites, so a process sees when another one delivered in between)
 *   2. skip ids already present (reported `duplicate`), number the rest lastSeq+1...
 *   3. prepare each entry: a message whose outbox file holds exactly its canonical text
 *      is hard-linked (fdatasync'ed first unless its writer flushed it, which its
 *      read-only mode says: FLUSHED_MESSAGE_MODE); any other is written to a temp
 *      file and fsynced
 *   4. link or rename the entries in seq order, then one directory fsync
 *   5. rewrite `.head` (it was spoiled with a pending token before step 4), keep the
 *      lock for a short lease
 * A crash in step 4 leaves a prefix of the batch plus temp files (swept at start); the
 * next delivery re-reads the folder, so numbering stays gap-free. A crash after 4 but
 * before the caller recorded success makes it retry: the ids are found in step 2 and
 * reported `duplicate`. Nothing is delivered twice.
 *
 * Why links: the sender already made the bytes durable (or the flush here does). Writing
 * a copy costs a file creation and an fsync per message; a link costs a tenth of the
 * creation alone. Messages are never modified in place, so the inbox entry and `outbox/.sent/` may share the inode.
 */

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

/** `.head` tokens are rewritten in place through an open descriptor (see MarkerFile). */
const heads = new Map<string, MarkerFile>();

function readHead(p: AgentPaths): string | null {
  try {
    return readRegularFile(p.inboxHead, 'utf8').trim();
  } catch {
    return null;
  }
}

function writeHead(p: AgentPaths, token: string): void {
  let marker = heads.get(p.inbox);
  if (!marker) {
    if (heads.size >= 256) {
      const [oldest, m] = heads.entries().next().value as [string, MarkerFile];
      m.close();
      heads.delete(oldest);
    }
    marker = new MarkerFile(p.inboxHead, 64);
    heads.set(p.inbox, marker);
  }
  marker.writeText(token);
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

/** ms after which an inbox lock whose holder stopped refreshing it is broken (a dead holder's is taken over at once). */
export const INBOX_LOCK_STALE_MS = 5_000;

export interface LockOptions {
  /** ms after which a lock whose holder stopped refreshing it is broken (min 2000). */
  stale?: number;
  /**
   * Keep the lock this many ms after the last use (a lease). Creating and removing the
   * lock folder costs about 1 ms here, more than the write it protects; a deliverer
   * under load keeps the lease and pays once. 0 releases at once. Default 200.
   */
  holdMs?: number;
}

/**
 * An inbox lock held by this process: an in-process queue (one delivery at a time per
 * inbox) in front of proper-lockfile's cross-process lock, kept for `holdMs` after use.
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
      return await fn();
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
    const { release } = await lockWithOwner(this.p.inboxLock, this.p.inboxLockOwner, () =>
      lockfile.lock(this.p.inbox, {
        fs: lockFs,
        lockfilePath: this.p.inboxLock,
        stale: options.stale ?? INBOX_LOCK_STALE_MS,
        realpath: false,
        retries: { retries: 2_000, factor: 1.2, minTimeout: 1, maxTimeout: 25 },
        onCompromised: () => {
          // Someone broke our lock (we stalled past `stale`): forget it and what we cached.
          this.release = null;
          indexCache.delete(this.p.inbox);
        },
      }),
    );
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
  // lstat: an inbox that is a symlink could point anywhere; it is no inbox.
  if (!isRealDirectory(p.inbox)) {
    throw new HiveError('E_UNKNOWN_AGENT', `Agent "${agentId}" has no inbox folder at ${p.inbox}; create it with ensureAgent or \`hive spawn\``);
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

/** An outbox file holding a message's canonical text; `flushed`: its writer flushed it. */
export interface MessageSource {
  file: string;
  flushed: boolean;
}

export interface DeliverOptions extends LockOptions {
  doneCap?: number;
  /** The outbox file holding a message's canonical text, when there is one (hard-link it). */
  sourceOf?: (message: HiveMessage) => MessageSource | undefined;
}

interface Prepared {
  name: string;
  /** A temp file to rename, or a source file to link. */
  temp?: string;
  source?: MessageSource;
  message: HiveMessage;
}

function writeTemp(dir: string, name: string, data: string): string {
  const temp = tempNameFor(path.join(dir, name));
  const fd = fs.openSync(temp, 'w', hiveModes().file);
  try {
    fs.writeFileSync(fd, data);
    syncFd(fd);
  } finally {
    fs.closeSync(fd);
  }
  return temp;
}

/** Steps 3–4: prepare every entry, then make them visible in seq order. */
async function place(dir: string, entries: Prepared[]): Promise<void> {
  // Sources their writer did not flush are flushed here, concurrently.
  await Promise.all(
    entries.map(async (e) => {
      if (!e.source || e.source.flushed) return;
      try {
        await syncFileAsync(e.source.file);
      } catch {
        delete e.source; // gone or unreadable: fall back to a copy
      }
    }),
  );
  for (const e of entries) if (!e.source) e.temp = writeTemp(dir, e.name, encodeMessage(e.message));
  for (const e of entries) {
    const target = path.join(dir, e.name);
    if (e.source) {
      try {
        fs.linkSync(e.source.file, target);
        continue;
      } catch {
        e.temp = writeTemp(dir, e.name, encodeMessage(e.message)); // EXDEV, EPERM, vanished source
      }
    }
    fs.renameSync(e.temp!, target);
  }
}

/**
 * Delivers messages into one agent's inbox with gap-free sequence numbers and one
 * directory fsync for the batch. Idempotent on message id.
 * @example
 * const [r] = await deliver(root, 'bob', [msg]); // { id, status: 'delivered', seq: 1 }
 * await deliver(root, 'bob', [msg]);            // [{ id, status: 'duplicate' }]
 */
export async function deliver(root: string, agentId: string, messages: HiveMessage[], options: DeliverOptions = {}): Promise<DeliveryOutcome[]> {
  const p = agentPaths(root, agentId);
  const doneCap = options.doneCap ?? DEFAULT_DONE_CAP;
  return withInboxLock(
    root,
    agentId,
    async () => {
      const index = loadIndex(root, p);
      const outcomes: DeliveryOutcome[] = [];
      const entries: Prepared[] = [];
      const fresh = new Set<string>();
      let seq = index.lastSeq;
      for (const m of messages) {
        if ((index.ids.has(m.id) && !plantActive('no-idempotency')) || fresh.has(m.id)) {
          outcomes.push({ id: m.id, status: 'duplicate' });
          continue;
        }
        seq += 1;
        fresh.add(m.id);
        const source = options.sourceOf?.(m);
        entries.push({ name: inboxFileName(seq, m.id), message: m, ...(source ? { source } : {}) });
        outcomes.push({ id: m.id, status: 'delivered', seq });
      }
      if (entries.length === 0) return outcomes;
      // Spoil `.head` first: a crash after some renames but before the new token is written
      // must not leave the old token, which other processes' caches would still trust.
      writeHead(p, `pending-${process.pid}-${randomBytes(6).toString('hex')}`);
      crashPoint('deliver.after-head-spoiled');
      try {
        await place(p.inbox, entries);
        crashPoint('deliver.after-links');
        await fsyncDirAsync(p.inbox);
        crashPoint('deliver.after-dir-sync');
      } catch (err) {
        indexCache.delete(p.inbox);
        for (const e of entries) if (e.temp) fs.rmSync(e.temp, { force: true });
        throw err;
      }
      index.lastSeq = seq;
      for (const id of fresh) rememberId(index, id, doneCap);
      index.token = `${seq}-${process.pid}-${randomBytes(6).toString('hex')}`;
      writeHead(p, index.token);
      return outcomes;
    },
    options,
  );
}

/** Forget cached inbox indexes (tests, or after a folder was replaced by hand). */
export function resetInboxCache(): void {
  indexCache.clear();
}
