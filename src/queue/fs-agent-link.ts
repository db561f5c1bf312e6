import type { HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import { StateStore, type SessionTurn } from '../agent/state-store.ts';
import { freshAgent, restoreAgentState } from '../agent/restore.ts';
import { spillUnrouted } from '../agent/spill.ts';
import { commitCursor, mirrorCursorAsync } from './cursor.ts';
import { isAfter, readRouted } from './commit-outbox.ts';
import { InboxReader, lastInboxSeq, type InboxEntry } from './inbox.ts';
import type { AgentLink, CommitHint, DeliveryHint, RestoredAgent } from './transport.ts';
import { HiveError } from '../errors.ts';
import { SYNCED_NAME } from './inbox-log.ts';
import { agentPaths } from '../layout/paths.ts';
import fs from 'node:fs';
import path from 'node:path';

export interface FsAgentLinkOptions {
  /** The poll's tick (ms): the link looks for work it was not told of on one tick in POLL_EVERY. */
  pollMs: number;
  /**
   * Runs `tick` every `pollMs` on a timer shared with the other links of its transport;
   * returns its cancel. Without it the link keeps a timer of its own.
   */
  schedule?: (tick: () => void) => () => void;
  /**
   * Where this link's count toward its look starts (0–14): the links of a shared timer
   * tick together, and without a spread they would all look on the same tick (10,000
   * lstats at once every 30 s).
   */
  phase?: number;
}

/** How long after a commit `cursor.json` (a mirror for people and tools) is rewritten. */
const MIRROR_DELAY_MS = 250;

/** At most this many commits are told to the router at once (it reads the rest). */
const MAX_HINTS = 256;

/** How long a commit about to wrap the log waits for the router to read it (then spills). */
const WRAP_WAIT_MS = 1_000;

/** A link looks at its inbox on one poll tick in this many (docs/architecture.md, "Idle agents cost nothing"). */
const POLL_EVERY = 15;

/**
 * An agent's side of the filesystem transport (docs/architecture.md, "Transport"): its
 * commit log (`state.json` + `state.wal`, which is also its outbox: the router reads the
 * turns' messages from it), its reader of the inbox log, and the ways it learns of work:
 * a delivery made by the transport instance that opened it, `notify` (the router's wake,
 * which reaches an agent's worker over a message port), and a poll.
 */
export class FsAgentLink implements AgentLink {
  private store: StateStore | null = null;
  private readonly reader: InboxReader;
  private readonly listeners = new Set<() => void>();
  private poll: (() => void) | null = null;
  private mirror: NodeJS.Timeout | null = null;
  private cursor = 0;
  private closed = false;

  constructor(
    private readonly root: string,
    readonly agentId: string,
    private readonly options: FsAgentLinkOptions,
    private readonly onClose: () => void = () => undefined,
  ) {
    this.reader = new InboxReader(root, agentId);
    this.phase = (options.phase ?? 0) % POLL_EVERY;
    this.syncedFile = path.join(agentPaths(root, agentId).inbox, SYNCED_NAME);
  }

  /** `inbox/.synced`, rewritten at every delivery: what the poll looks at. */
  private readonly syncedFile: string;

  async restore(options: { madeNow?: boolean } = {}): Promise<RestoredAgent> {
    const restored = options.madeNow ? freshAgent(this.agentId) : restoreAgentState(this.root, this.agentId);
    this.store?.close();
    this.hints = null;
    // Before a checkpoint lets the log be written over, what the router has not routed yet
    // is written out as outbox files (src/agent/spill.ts), unless it is known to be routed.
    this.store = new StateStore(this.root, this.agentId, restored.commit, undefined, () => {
      const waited = this.waitedForRouter;
      this.waitedForRouter = false;
      if (this.behindRouter() === false) return waited ? 1 : 0;
      const spilled = spillUnrouted(this.root, this.agentId);
      if (spilled > 0) this.spilled = true;
      return spilled + (waited ? 1 : 0);
    });
    // A killed process may have left the last commit in the page cache only: flushed, then
    // marked, so the router may route its messages.
    if (!options.madeNow) this.store.markRestored(); // a new agent has no commit to mark
    this.cursor = restored.context.cursor;
    return restored;
  }

  async fetch(afterSeq: number, limit?: number): Promise<InboxEntry[]> {
    return this.reader.readRejecting(afterSeq, limit);
  }

  async commit(context: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): Promise<number> {
    if (!this.store) throw new HiveError('E_CONFLICT', `The link of agent "${this.agentId}" commits before its restore`);
    const prepared = this.store.prepare(context, messages, session);
    if (prepared.wraps) {
      await this.untilRouted();
      if (!this.store) throw new HiveError('E_CONFLICT', `The link of agent "${this.agentId}" was closed during a commit`);
    }
    const record = this.store.write(prepared);
    // A wrap put the commit in state.json and the log goes on at 0 (logEnd): told like any
    // other, unless it wrote outbox files (a spill), which the router must read.
    if (this.spilled || (this.hints && this.hints.length >= MAX_HINTS)) this.hints = null;
    else this.hints?.push({ agent: this.agentId, commit: record.commit, end: this.store.logEnd, messages });
    this.spilled = false;
    this.cursor = context.cursor;
    this.mirror ??= unref(setTimeout(() => this.mirrorCursorSoon(), MIRROR_DELAY_MS));
    return record.commit;
  }

  private waitedForRouter = false;
  /** The commit under way wrote outbox files before its wrap (a spill). */
  private spilled = false;

  /** The commits since the last `takeCommitHints`, in order; null when one of them is not told (a wrap) or none was taken yet. */
  private hints: CommitHint[] | null = null;

  /**
   * The commits made since the last call, for the router (Transport.offerCommits), which
   * then routes their messages without reading them back from the log; null when they
   * cannot all be told (the first call, a checkpoint in between, too many): the router
   * reads the log and the agent's files.
   */
  takeCommitHints(): CommitHint[] | null {
    const hints = this.hints;
    this.hints = [];
    return hints;
  }

  /**
   * Whether the router has yet to route messages this agent committed (its mark in
   * agents/<id>/routed is before the last of them); undefined when that is not known.
   */
  private behindRouter(): boolean | undefined {
    const emitted = this.store?.emittedThrough();
    if (emitted === null) return false;
    if (emitted === undefined) return undefined;
    return isAfter(emitted, readRouted(this.root, this.agentId));
  }

  /**
   * Back-pressure before the log wraps (docs/architecture.md, "The commit record is the
   * outbox"): a router that has not read the lines about to be written over gets up to
   * WRAP_WAIT_MS to catch up, so they need not be written again as outbox files. Writing
   * them (the spill) cost an agent a file, an fsync and a rename per message, and the
   * router an outbox read each, exactly when the router was already behind.
   */
  private async untilRouted(): Promise<void> {
    if (this.behindRouter() !== true) return;
    this.waitedForRouter = true;
    const deadline = Date.now() + WRAP_WAIT_MS;
    for (let pause = 1; !this.closed && Date.now() < deadline && this.behindRouter() === true; pause = Math.min(pause * 2, 16)) {
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  onWork(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.poll) {
      // A subscriber reads what is there already (an agent's actor wakes itself once as it
      // starts); the poll's looks wake it only for entries after its cursor. Waking all
      // 10,000 agents of a big hive on the first tick after a start held every core for
      // seconds (bench:scale).
      this.ticks = this.phase;
      this.poll = (this.options.schedule ?? ownTimer(this.options.pollMs))(() => this.pollTick());
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.poll) {
        this.poll();
        this.poll = null;
      }
    };
  }

  hasEntriesAfter(afterSeq: number): boolean {
    // The reader reads up to `.synced` and no further (src/queue/inbox.ts).
    return lastInboxSeq(this.root, this.agentId) > afterSeq;
  }

  /** Tells the listeners there may be work (a delivery, the router's wake, the poll): the next fetch reads the inbox. */
  notify(): void {
    this.reader.lookAgain();
    for (const l of this.listeners) l();
  }

  /** A batch delivered to this agent, as the router told it (Transport.takeDeliveries): the next fetch may take it from here. */
  offer(hint: DeliveryHint): void {
    this.reader.offer(hint);
    for (const l of this.listeners) l();
  }

  private readonly phase: number;
  private ticks = 0;

  /**
   * The safety poll (docs/architecture.md, "Idle agents cost nothing"): a link looks at its
   * inbox on one tick in POLL_EVERY, at its own phase, so the links sharing a timer spread
   * their looks over its ticks. A lost wake costs at most POLL_EVERY ticks, never a message;
   * a new router makes every link look at once (`lookNow`).
   */
  private pollTick(): void {
    if (++this.ticks < POLL_EVERY) return;
    this.ticks = 0;
    this.lookNow();
  }

  /**
   * One look: the listeners hear of work when entries wait after the last commit's cursor.
   * An lstat of `inbox/.synced` first (not there: nothing was ever delivered, nothing to
   * read), then one small read of it. The read is needed even when `.synced` looks as it
   * did: it keeps its size and inode, and its mtime is coarse.
   */
  lookNow(): void {
    if (this.listeners.size === 0) return;
    if (this.inboxMade() && this.hasEntriesAfter(this.cursor)) this.notify();
  }

  /** Whether anything was ever delivered here (`inbox/.synced` is there): one lstat, no error object when not. */
  private inboxMade(): boolean {
    try {
      return fs.lstatSync(this.syncedFile, { throwIfNoEntry: false }) !== undefined;
    } catch {
      return false;
    }
  }

  close(): void | Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.poll?.();
    this.poll = null;
    this.listeners.clear();
    let landed: Promise<void> | undefined;
    if (this.mirroring) {
      // The last word is the latest cursor: written once the write under way has landed.
      // A stop awaits it: a thread that ended first left the write's temp file behind.
      const last = this.cursor;
      if (this.mirror) clearTimeout(this.mirror);
      this.mirror = null;
      landed = this.mirroring.then(() => this.mirrorCursor(last));
    } else if (this.mirror) this.mirrorCursor();
    this.store?.close();
    this.store = null;
    this.onClose();
    return landed;
  }

  /** One mirror write at a time (a later one must not be renamed over by an earlier). */
  private mirroring: Promise<void> | null = null;

  /** The lazy mirror, written off this thread (src/queue/cursor.ts, mirrorCursorAsync). */
  private mirrorCursorSoon(): void {
    this.mirror = null;
    if (this.closed) return;
    if (this.mirroring) {
      this.mirror = unref(setTimeout(() => this.mirrorCursorSoon(), MIRROR_DELAY_MS));
      return;
    }
    const run = mirrorCursorAsync(this.root, this.agentId, this.cursor).catch(() => undefined); // a mirror
    this.mirroring = run.finally(() => (this.mirroring = null));
  }

  /** `cursor.json` mirrors the committed cursor, lazily; the commit record is the truth. At close: written before it returns. */
  private mirrorCursor(seq = this.cursor): void {
    if (this.mirror) clearTimeout(this.mirror);
    this.mirror = null;
    try {
      commitCursor(this.root, this.agentId, seq, { durable: false });
    } catch {
      // a mirror
    }
  }
}

function unref<T extends NodeJS.Timeout>(t: T): T {
  t.unref();
  return t;
}

/** A timer of the link's own (a link opened outside a transport). */
function ownTimer(ms: number): (tick: () => void) => () => void {
  return (tick) => {
    const t = unref(setInterval(tick, ms));
    return () => clearInterval(t);
  };
}

/**
 * One timer for every link of a transport (an agent host's worker): each tick runs every
 * link's poll. A pooled host of 100 agents kept 100 interval timers, each waking its
 * thread on its own: an idle hive of 3,000 agents used a quarter of a core.
 */
export function sharedTimer(ms: number): (tick: () => void) => () => void {
  const ticks = new Set<() => void>();
  let timer: NodeJS.Timeout | null = null;
  return (tick) => {
    ticks.add(tick);
    timer ??= unref(setInterval(() => {
      for (const t of ticks) t();
    }, ms));
    return () => {
      ticks.delete(tick);
      if (ticks.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
    };
  };
}
