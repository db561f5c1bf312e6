import type { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { InboxEntry } from './inbox.ts';
import type { DeliveryHint } from './told-deliveries.ts';

export type { DeliveryHint } from './told-deliveries.ts';
import type { DeliveryOutcome } from './inbox-writer.ts';
import type { DeadLetterReason } from './dead-letter.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import type { ConversationReplica } from '../session/replica.ts';
import type { SessionTurn } from '../agent/state-store.ts';

/**
 * The message transport (docs/architecture.md, "Transport"). The filesystem queues are the embedded default;
 * a broker-backed transport (NATS JetStream: outbox = a publish, inbox = a stream
 * with message-id dedupe, cursor = a durable consumer) must pass the same
 * conformance suite (`test/conformance/transport.ts`).
 */
export interface Transport {
  readonly kind: string;

  /** Durably accepts messages from their senders. Resolves only when on stable storage. */
  send(messages: HiveMessage[]): Promise<void>;
  /** Items a sender has sent that are not routed yet, in the order they were sent. */
  pending(sender: string, limit?: number, options?: PendingOptions): Promise<PendingItem[]>;
  /** Marks routed items so `pending` no longer returns them. */
  settle(sender: string, refs: string[]): Promise<void>;
  /** Moves one pending item to the dead-letter store with its reason. */
  reject(sender: string, ref: string, reason: DeadLetterReason): Promise<void>;
  /**
   * Stores a copy of a message that could not reach one of its recipients (the others got
   * it, so the item itself is settled). Idempotent on `key`: a pass re-run after a crash
   * stores it once.
   */
  deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason): Promise<void>;

  /**
   * Delivers messages to one recipient: gap-free seq numbers, idempotent on id. Rejects
   * with `E_UNKNOWN_AGENT` when the recipient has no inbox. `options.alone`: no other
   * delivery runs beside this one (a pass with one recipient), so its flush may block the
   * thread instead of going through a thread pool and back.
   */
  deliver(recipient: string, messages: HiveMessage[], options?: DeliverOptions): Promise<DeliveryOutcome[]>;
  /**
   * Delivered entries with seq > afterSeq, in order, for those who look at an inbox (an
   * agent reads through its link): invalid entries are dead-lettered when that can be
   * written, else left in the inbox and out of the answer.
   */
  read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]>;
  /** The recipient's committed cursor: the last seq its last commit handled (0 before any). */
  cursor(recipient: string): Promise<number>;
  /** Entries delivered to the recipient after its committed cursor (the inbox depth), in one small read. */
  depth(recipient: string): Promise<number>;
  /** The agent's side of the transport: what its actor reads, commits and waits on. */
  agent(id: string): AgentLink;
  /**
   * Optional, the router's side: an agent's commits as its host saw them right after they
   * became durable (a hint: the commit record stays the truth, and a transport may ignore
   * it). The filesystem's router then routes their messages without reading the commit log.
   */
  offerCommits?(hints: CommitHint[]): void;
  /**
   * Optional, the router's side: the batches delivered to `recipient` since the last call,
   * for its agent's host to read without reading them back from the inbox (a hint, like
   * `offerCommits`; the filesystem's, given to its links with FsTransport.offerDeliveries).
   */
  takeDeliveries?(recipient: string): DeliveryHint[];
  /** Lets go of what the transport holds open (files, connections, the links it opened). */
  close(): void;
}

/** What a look at a sender's pending items may leave out. */
export interface PendingOptions {
  /**
   * False: the sender's files (outbox folder, send log) are known unchanged since the last
   * look (the pass was asked for by a commit or a `hive.send()` only, and every file
   * written comes with a kick or a file event of its own), so they need not be read.
   */
  files?: boolean;
}

/**
 * One durable commit of an agent, told to the router (Transport.offerCommits) by the host
 * that wrote it: its number, where its line in the agent's commit log ends, its messages.
 */
export interface CommitHint {
  agent: string;
  commit: number;
  /** Byte offset in the commit log (`state.wal`) just past the commit's line. */
  end: number;
  messages: HiveMessage[];
}

/**
 * One agent's side of the message path (docs/architecture.md, "Transport"). The agent's
 * actor is its only user: one link per agent per process, one process per agent.
 * @example
 * const link = transport.agent('bob');
 * const at = await link.restore();
 * const work = await link.fetch(at.context.cursor, 8);
 * await link.commit({ ...at.context, cursor: work.at(-1)!.seq }, replies);
 */
export interface AgentLink {
  readonly agentId: string;
  /**
   * Brings the agent's store back to its last commit (after a crash too: what the commit
   * holds is made durable and routable) and returns it; `from: 'fresh'` before the first.
   * Call once, before `commit`. `madeNow`: the agent's local folder was made by this start
   * (`HostedAgentSpec.madeNow`), so nothing of an earlier run is in it; a filesystem link
   * restores it as fresh without looking, a cluster link ignores it (the cluster holds
   * the agent's state, whatever this machine's folder).
   */
  restore(options?: { madeNow?: boolean }): Promise<RestoredAgent>;
  /** Delivered entries with seq > afterSeq, in order, up to `limit`; invalid ones are dead-lettered. */
  fetch(afterSeq: number, limit?: number): Promise<InboxEntry[]>;
  /**
   * One turn, committed as one durable record: the state (its `cursor` says which entries
   * are handled) and the messages the turn emits. Once it resolves the messages are the
   * transport's to route, exactly once, to the recipients (`pending(agentId)`). Returns
   * the commit number (1, 2, 3… per agent, on from the restored one).
   */
  commit(context: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): Promise<number>;
  /** Calls `listener` when new work may be there: at least once after each delivery to the agent. Returns the unsubscribe. */
  onWork(listener: () => void): () => void;
  /**
   * Whether `fetch(afterSeq)` would find anything, when a transport knows that without
   * reading the inbox (the filesystem's `.synced`: one small read). Absent: not known
   * cheaply, so the caller reads. An actor starting with nothing to do skips its first
   * read (10,000 of them held every core for seconds after a big hive's start).
   */
  hasEntriesAfter?(afterSeq: number): boolean;
  /**
   * Cluster mode: the agent's conversation kept in the cluster beside its commits, so the
   * machine that runs it next goes on with it (fenced like the commits: a stale owner's
   * save fails with E_CONFLICT). Absent on one machine, where the folder is the store.
   */
  readonly conversation?: ConversationStore;
  /** Stops it; a promise when something it started still lands (the filesystem's cursor mirror): a stop awaits it. */
  close(): void | Promise<void>;
}

export interface ConversationStore {
  /** The last saved conversation (null: none yet). Call before `save`. */
  load(): Promise<ConversationReplica | null>;
  /** Saves it after a commit; E_CONFLICT when another owner saved since `load`. */
  save(replica: ConversationReplica): Promise<void>;
}

export interface RestoredAgent {
  from: 'state' | 'fresh';
  /** The commit restored (0 before the first). */
  commit: number;
  context: PersistedAgentContext;
  /** What the last committed turn added to the conversation (for a session that fell behind). */
  lastSession: SessionTurn[];
  /** The messages the last commit emitted. */
  messages: HiveMessage[];
}

export interface DeliverOptions {
  alone?: boolean;
}

export interface PendingItem {
  /** Opaque reference for settle/reject (a file name for the filesystem transport). */
  ref: string;
  message: HiveMessage | null;
  /** Why the item is not a valid message (set when `message` is null). */
  error: HiveError | null;
  /** For an invalid item: ms since it was last written (a writer may still be at it). */
  ageMs?: number;
}
