// Long on purpose: the router's side and the agent's side share the streams, the routed
// marks and the per-inbox writers; split apart, each half would need all of it.
import { randomUUID } from 'node:crypto';
import { type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { connect } from './nats.ts';
import { jetstream, jetstreamManager, JetStreamApiError, StorageType, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { HiveError, errorMessage } from '../errors.ts';
import { parseMessage, type HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import type { SessionTurn } from '../agent/state-store.ts';
import type { InboxEntry } from './inbox.ts';
import type { DeliveryOutcome } from './inbox-writer.ts';
import type { DeadLetterReason } from './dead-letter.ts';
import type { AgentLink, ConversationStore, PendingItem, RestoredAgent, Transport } from './transport.ts';
import { FencedFiles } from './jetstream-files.ts';
import { plantActive } from '../testing/seams.ts';
import { SharedInboxes } from './jetstream-shared-inboxes.ts';
import { addRecent } from './recent-ids.ts';
import { contiguousFrom, SubjectFeed, type FedMsg } from './jetstream-feed.ts';
import { RepeatMarker } from './repeat-marker.ts';
import type { ConversationReplica } from '../session/replica.ts';

/**
 * The message path on NATS JetStream (docs/architecture.md, "Transport on JetStream").
 *
 * - `<prefix>_OUT`, one stream for every sender: `<p>.send.<sender>` holds what `send`
 *   accepted (one message each), `<p>.commit.<agent>` an agent's commit records (state,
 *   cursor and the turn's messages in one record: the record is the agent's outbox).
 *   A commit is published with the subject's last sequence expected, so a second writer
 *   of one agent (a stale owner come back) cannot commit: E_CONFLICT.
 * - `<prefix>_IN_<agent>`, one stream per inbox: its stream sequence is the inbox seq
 *   (gap-free, 1, 2, 3…). Only the instance that delivers writes it; each publish expects
 *   the stream's last sequence, so two deliverers cannot interleave.
 * - KV `<prefix>_routed`: per sender, how far its items are routed. KV `<prefix>_dead`:
 *   the dead letters, one key each (idempotent: a key is created once). KV
 *   `<prefix>_files`: agents' conversations and memory.md (src/queue/jetstream-files.ts).
 *
 * Exactly-once does not rest on JetStream's duplicate window: the deliverer keeps the ids
 * its inbox holds (read back from the stream when first used), like the filesystem's inbox
 * writer, and routed marks are monotonic.
 */

export interface JetStreamTransportOptions {
  /** NATS servers, e.g. `['nats://127.0.0.1:4222']`. */
  servers: string[];
  /** Names this hive's streams and subjects (letters, digits, `_`, `-`). */
  prefix: string;
  /** Stream replicas (1 on a single server; 3 on a three-node cluster). */
  replicas?: number;
  /**
   * JetStream's own duplicate window for new inbox streams (ms, default its 2 minutes).
   * Exactly-once does not depend on it; a test shortens it to show that.
   */
  duplicateWindowMs?: number;
  /** How often an agent's link looks for work it was not told of (ms, default 2000). */
  pollMs?: number;
  /** How long the router's read waits for a publish it heard to reach the subject's feed before asking the stream (ms, default 3). */
  feedWaitMs?: number;
}

export interface JetStreamTransport extends Transport {
  /** Creates the inbox of an agent (a stream) if it has none. */
  ensureAgent(id: string): Promise<void>;
  /** Waits for what is buffered to reach the server, then disconnects. */
  drain(): Promise<void>;
  /** Tells the links of these agents (opened by this instance) there may be work. */
  notify(agents: Iterable<string>): void;
  /** The connected server's version and the replicas the hive's streams really have. */
  setup(): Promise<{ serverVersion: string; replicas: number }>;
  /** Calls `listener` with the sender whenever an agent commits or anyone sends (any instance, any machine). */
  onSent(listener: (sender: string) => void): () => void;
  /** The hive's files kept in the cluster: conversations, memory.md. */
  readonly files: FencedFiles;
  /** Closes the router's feeds of `sender`'s subjects (it runs elsewhere now); a later read opens them again. */
  release(sender: string): void;
}

interface CommitRecord {
  version: 1;
  agent: string;
  commit: number;
  context: PersistedAgentContext;
  messages: HiveMessage[];
  session: SessionTurn[];
  /** Which link wrote it (a nonce): a commit whose ack was lost knows its own record again. */
  owner: string;
  committed_at: string;
}

/** How far a sender's items are routed: commit records up to (seq, index), sends up to seq. */
interface RoutedMark {
  commit: { seq: number; index: number };
  send: number;
}

const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
/** How many of an inbox's newest entries a deliverer knows the ids of (the filesystem's doneCap). */
const DEDUPE_HORIZON = 5_000;
/** Gets a read keeps in flight at once. */
const READ_WINDOW = 128;
/**
 * A read that found a subject's end is trusted (no request while nothing was heard since and
 * the feed works) for this many poll intervals; then the stream is asked again, so a feed
 * that stalled without saying so costs a delay, never a message.
 */
const FEED_TRUST_POLLS = 10;
/**
 * How long the router's read waits for its feed to pass on a publish it heard before asking
 * the stream (ms): the consumer sends a message right after the stream stores it, ~0.1–1 ms
 * on loopback.
 */
const FEED_WAIT_MS = 3;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** An agent id as one subject token and part of a stream name ('.' is neither). */
function token(id: string): string {
  return id.replaceAll('.', '=');
}

/** The agent id of a sender's subject (`<prefix>.commit.<token>`, `<prefix>.send.<token>`). */
function senderOfSubject(subject: string): string {
  return subject.slice(subject.lastIndexOf('.') + 1).replaceAll('=', '.');
}

/** NATS did not answer for now: a timeout, no responders, a lost connection, no leader yet. */
export function isUnreachable(err: unknown): boolean {
  const name = (err as { name?: string }).name ?? '';
  // The client's own: no answer in time, nobody listening (JetStream not up yet), the connection gone.
  if (/^(TimeoutError|JetStreamNotEnabled|NoResponders|ClosedConnectionError|DrainingConnectionError|ConnectionError)$/.test(name)) return true;
  // The server's: 503 (no leader for now, short of resources), or no peers to place a replica on yet.
  if (err instanceof JetStreamApiError) return err.status === 503 || /^no suitable peers/i.test(err.message);
  return false;
}

/**
 * Runs one operation; NATS not answering becomes `E_UNAVAILABLE` marked as a shortage, so
 * the actor or the router waits and tries the same step again (src/fs/shortage.ts) instead
 * of crashing (which would count toward restarts and poison). A commit tried again after a
 * lost ack is recognised by its owner nonce (publishCommit).
 */
async function reachable<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (err instanceof HiveError || !isUnreachable(err)) throw err;
    throw new HiveError('E_UNAVAILABLE', `NATS JetStream did not answer (${what}): ${errorMessage(err)}`, { cause: err, details: { shortage: 'nats' } });
  }
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.status === 404 || /not found/i.test(err.message));
}

/**
 * Connects to NATS and opens (creating when missing) the hive's streams and buckets.
 * @example const t = await createJetStreamTransport({ servers: ['nats://127.0.0.1:4222'], prefix: 'hive' });
 */
export async function createJetStreamTransport(options: JetStreamTransportOptions): Promise<JetStreamTransport> {
  if (!PREFIX_PATTERN.test(options.prefix)) throw new HiveError('E_BAD_CONFIG', `JetStream prefix "${options.prefix}" must be 1–32 letters, digits, "_" or "-"`);
  let nc: NatsConnection;
  try {
    // Never gives up on the servers: a machine cut off for a while reconnects when the link heals.
    // A server cut off is noticed within seconds (pings), and another one of the list is used.
    nc = await connect({ servers: options.servers, name: `hive-${options.prefix}`, maxReconnectAttempts: -1, reconnectTimeWait: 500, pingInterval: 2_000, maxPingOut: 2 });
  } catch (err) {
    throw new HiveError('E_UNAVAILABLE', `Cannot connect to NATS at ${options.servers.join(', ')}: ${errorMessage(err)}`, { cause: err });
  }
  // Asks the account's JetStream info: a cluster electing its leader answers 503 for a while
  // (seen: a machine taking agents over as another died, its workers failing five starts in
  // half a second and given up on).
  const jsm = await whileStarting(() => jetstreamManager(nc));
  const js = jetstream(nc);
  const replicas = options.replicas ?? 1;
  const p = options.prefix;
  const out = `${p}_OUT`;
  // A cluster of servers that has just started has no JetStream leader for a moment: tried again.
  await whileStarting(() => addStream(jsm, { name: out, subjects: [`${p}.send.>`, `${p}.commit.>`], num_replicas: replicas, storage: StorageType.File, allow_direct: true }));
  const kvm = new Kvm(nc);
  const routedKv = await whileStarting(() => kvm.create(`${p}_routed`, { replicas, history: 1 }));
  const deadKv = await whileStarting(() => kvm.create(`${p}_dead`, { replicas, history: 1 }));
  // No direct gets: a follower that is behind would answer an old conversation or memory.
  const filesKv = await whileStarting(() => kvm.create(`${p}_files`, { replicas, history: 1, allow_direct: false } as Parameters<Kvm['create']>[1]));
  return new JetStreamTransportImpl(nc, js, jsm, routedKv, deadKv, new FencedFiles(filesKv), p, replicas, options.duplicateWindowMs, options.pollMs ?? 2_000, options.feedWaitMs ?? FEED_WAIT_MS);
}

/**
 * Runs `step` again while JetStream says it is not ready yet (a cluster electing its
 * leader), or while another machine creates the same stream at the same moment (the
 * loser of that race hears "subjects overlap"; seen in npm test, two routers starting
 * together; tried again, it finds the stream the winner made), up to 30 s.
 */
export async function whileStarting<T>(step: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      const racedCreate = err instanceof JetStreamApiError && /subjects overlap with an existing stream/i.test(err.message);
      const busy = /temporarily unavailable/i.test(errorMessage(err));
      if (Date.now() > deadline || !(isUnreachable(err) || racedCreate || busy)) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function addStream(jsm: JetStreamManager, config: Parameters<JetStreamManager['streams']['add']>[0]): Promise<void> {
  try {
    await jsm.streams.info(config.name!);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.streams.add(config);
  }
}

/** One inbox's writer: the last seq and the ids it holds; deliveries to it run one at a time. */
interface InboxState {
  last: number;
  ids: Set<string>;
  queue: Promise<unknown>;
}

class JetStreamTransportImpl implements JetStreamTransport {
  readonly kind = 'jetstream';
  private readonly inboxes = new Map<string, Promise<InboxState>>();
  /** Per inbox, the repeats its readers have been told of (markRepeats). */
  private readonly repeats = new Map<string, RepeatMarker>();
  private readonly marks = new Map<string, RoutedMark>();
  /** Items handed out by `pending`, in order, per sender; settled ones are noted until the mark passes them. */
  private readonly handed = new Map<string, { ref: string; raw: string; message: HiveMessage | null }[]>();
  private readonly settled = new Map<string, Set<string>>();
  private readonly links = new Map<string, JetStreamAgentLink>();
  /** The router's feeds of senders' subjects on `<p>_OUT` (commit records, sends), by subject. */
  private readonly feeds = new Map<string, Promise<SubjectFeed | null>>();
  /** The same, once opened: a publish heard on a subject with a working feed waits for the feed. */
  private readonly liveFeeds = new Map<string, SubjectFeed>();
  /** Feeds of the inboxes another deliverer writes to as well (publishInOrder). */
  private readonly shared: SharedInboxes;
  private readonly sentListeners = new Set<(sender: string) => void>();
  /** Per subject heard while its feed was usable, the check that the feed passed it on. */
  private readonly stallChecks = new Map<string, NodeJS.Timeout>();
  /** How many `onSent` subscriptions hear the senders' subjects now. */
  private hearing = 0;
  /**
   * Per subject, the publishes heard since its last read of the stream, and how many its
   * feed had passed on then: more heard than passed on since means one is not in the feed
   * yet (or the stream refused it).
   */
  private readonly heardSinceRead = new Map<string, { heard: number; fedAt: number }>();
  /** Per subject, where and when the last read of the stream found nothing on it (while publishes were heard). */
  private readonly readEnd = new Map<string, { seq: number; at: number; connection: number }>();
  /**
   * Whether the connection is up, and how many times it came back: a read's "nothing
   * there" is trusted only on the connection it was made on (publishes while it was away
   * were never heard), and while it is down every read goes to NATS, so that an idle agent
   * learns of the shortage.
   */
  connected = true;
  connection = 0;
  private closed = false;

  constructor(
    readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly routedKv: KV,
    private readonly deadKv: KV,
    readonly files: FencedFiles,
    readonly prefix: string,
    private readonly replicas: number,
    private readonly duplicateWindowMs: number | undefined,
    readonly pollMs: number,
    private readonly feedWaitMs: number,
  ) {
    this.shared = new SharedInboxes(js, (id) => this.inboxStream(id), (id) => this.inboxSubject(id), feedWaitMs);
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type !== 'disconnect' && st.type !== 'reconnect') continue;
        this.connected = st.type === 'reconnect';
        this.connection++;
        this.readEnd.clear();
        if (st.type === 'reconnect') this.dropFeeds();
      }
    })().catch(() => undefined);
  }

  /**
   * After a reconnect every feed is opened again at its next read: the server may have
   * started again without its consumers (they are not durable), and a feed whose consumer
   * is gone looks usable until its heartbeats are missed (~30 s). Every sender with a feed
   * gets a pass and every agent a fetch: what was published meanwhile is read from the stream.
   */
  private dropFeeds(): void {
    const senders = [...this.feeds.keys()].map((subject) => senderOfSubject(subject));
    for (const f of this.feeds.values()) void f.then((x) => x?.close());
    this.feeds.clear();
    this.liveFeeds.clear();
    this.shared.clear();
    this.heardSinceRead.clear();
    for (const link of this.links.values()) link.dropFeed();
    for (const sender of new Set(senders)) this.sentListeners.forEach((l) => l(sender));
  }

  /**
   * Whether a read from `next` may skip the stream: the last read found nothing from at or
   * before `next`, on this connection, less than FEED_TRUST_POLLS polls ago.
   */
  trusts(end: { seq: number; at: number; connection: number } | null | undefined, next: number): boolean {
    return !!end && end.seq <= next && this.connected && end.connection === this.connection && Date.now() - end.at < this.pollMs * FEED_TRUST_POLLS;
  }

  private inboxStream(id: string): string {
    return `${this.prefix}_IN_${token(id)}`;
  }

  inboxSubject(id: string): string {
    return `${this.prefix}.inbox.${token(id)}`;
  }

  commitSubject(id: string): string {
    return `${this.prefix}.commit.${token(id)}`;
  }

  async ensureAgent(id: string): Promise<void> {
    await whileStarting(() => addStream(this.jsm, {
      name: this.inboxStream(id),
      subjects: [this.inboxSubject(id)],
      num_replicas: this.replicas,
      storage: StorageType.File,
      allow_direct: true,
      ...(this.duplicateWindowMs !== undefined ? { duplicate_window: this.duplicateWindowMs * 1_000_000 } : {}),
    }));
  }

  // ---- ingress and routing -------------------------------------------------------------

  async send(messages: HiveMessage[]): Promise<void> {
    await Promise.all(messages.map((m) => this.js.publish(`${this.prefix}.send.${token(m.from)}`, enc.encode(JSON.stringify(m)), { msgID: `send:${m.id}` })));
  }

  async pending(sender: string, limit = Infinity): Promise<PendingItem[]> {
    const mark = await this.markOf(sender);
    const done = this.settled.get(sender) ?? new Set<string>();
    const items: { ref: string; raw: string; message: HiveMessage | null; error: HiveError | null }[] = [];
    // The commit records first (an agent's turns), then what was sent: the filesystem's order.
    let lastRecord = 0;
    // Both subjects at once: when the feeds have it all, the pass costs one round trip.
    const [records, sends] = await Promise.all([this.subjectFrom(this.commitSubject(sender), sender, mark.commit.seq), this.subjectFrom(`${this.prefix}.send.${token(sender)}`, sender, mark.send + 1)]);
    for (const m of records) {
      if (items.length >= limit) break;
      lastRecord = m.seq;
      const record = JSON.parse(dec.decode(m.data)) as CommitRecord;
      (record.messages ?? []).forEach((message, index) => {
        if (m.seq === mark.commit.seq && index < mark.commit.index) return;
        const ref = `c${m.seq}.${index}`;
        if (!done.has(ref) && items.length < limit) items.push({ ref, raw: JSON.stringify(message), message, error: null });
      });
    }
    if (items.length === 0 && lastRecord > mark.commit.seq && !this.handed.get(sender)?.some((i) => i.ref.startsWith('c'))) {
      // Every record up to here has nothing left to route (turns that sent nothing): the
      // mark moves past them, or each pass would read them all again.
      await this.saveMark(sender, { ...mark, commit: { seq: lastRecord + 1, index: 0 } });
    }
    for (const m of sends) {
      if (items.length >= limit) break;
      const ref = `s${m.seq}`;
      if (done.has(ref)) continue;
      const raw = dec.decode(m.data);
      let parsed;
      try {
        parsed = parseMessage(JSON.parse(raw));
      } catch (err) {
        parsed = { ok: false as const, error: new HiveError('E_BAD_MESSAGE', `Not JSON: ${errorMessage(err)}`) };
      }
      items.push(parsed.ok ? { ref, raw, message: parsed.message, error: null } : { ref, raw, message: null, error: parsed.error });
    }
    this.handed.set(sender, items.map(({ ref, raw, message }) => ({ ref, raw, message })));
    return items.map(({ ref, message, error }) => (message ? { ref, message, error: null } : { ref, message: null, error, ageMs: Infinity }));
  }

  async settle(sender: string, refs: string[]): Promise<void> {
    let done = this.settled.get(sender);
    if (!done) this.settled.set(sender, (done = new Set()));
    for (const r of refs) done.add(r);
    await this.advance(sender);
  }

  async reject(sender: string, ref: string, reason: DeadLetterReason): Promise<void> {
    const item = this.handed.get(sender)?.find((i) => i.ref === ref);
    await this.storeDead(`from-${token(sender)}-${ref}`, item?.raw ?? null, { ...reason, source: reason.source || `${this.prefix}_OUT ${ref}` });
    await this.settle(sender, [ref]);
  }

  async deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason): Promise<void> {
    await this.storeDead(key, JSON.stringify(message), reason);
  }

  /** The dead letter under `key`, once (a key already there is left as it is). */
  private async storeDead(key: string, raw: string | null, reason: DeadLetterReason): Promise<void> {
    const safe = key.replace(/[^-/_=.a-zA-Z0-9]/g, '_');
    try {
      await this.deadKv.create(safe, enc.encode(JSON.stringify({ reason, item: raw, at: new Date().toISOString() })));
    } catch (err) {
      if (!/wrong last sequence|key exists/i.test(errorMessage(err))) throw err;
    }
  }

  /** Moves the sender's mark over the settled items at the front of what was handed out. */
  private async advance(sender: string): Promise<void> {
    const handed = this.handed.get(sender) ?? [];
    const done = this.settled.get(sender)!;
    const mark = await this.markOf(sender);
    let next: RoutedMark = { commit: { ...mark.commit }, send: mark.send };
    let moved = false;
    for (const item of handed) {
      if (!done.has(item.ref)) break;
      moved = true;
      if (item.ref.startsWith('c')) {
        const [seq, index] = item.ref.slice(1).split('.').map(Number) as [number, number];
        next = { ...next, commit: { seq, index: index + 1 } };
      } else next = { ...next, send: Number(item.ref.slice(1)) };
    }
    if (!moved) return;
    await this.saveMark(sender, next);
    const keep = handed.filter((i) => !done.has(i.ref));
    this.handed.set(sender, keep);
    for (const r of [...done]) if (!keep.some((i) => i.ref === r) && this.passed(next, r)) done.delete(r);
  }

  private async saveMark(sender: string, next: RoutedMark): Promise<void> {
    this.marks.set(sender, next);
    await this.routedKv.put(token(sender), enc.encode(JSON.stringify(next)));
  }

  private passed(mark: RoutedMark, ref: string): boolean {
    if (ref.startsWith('s')) return Number(ref.slice(1)) <= mark.send;
    const [seq, index] = ref.slice(1).split('.').map(Number) as [number, number];
    return seq < mark.commit.seq || (seq === mark.commit.seq && index < mark.commit.index);
  }

  private async markOf(sender: string): Promise<RoutedMark> {
    let m = this.marks.get(sender);
    if (m) return m;
    const e = await this.routedKv.get(token(sender));
    m = e && e.operation === 'PUT' && e.length > 0 ? e.json<RoutedMark>() : { commit: { seq: 0, index: 0 }, send: 0 };
    this.marks.set(sender, m);
    return m;
  }

  /**
   * The messages on `subject` of `<p>_OUT` from `seq` on, in order: what the subject's feed
   * holds (opened at the first call, from there on), then read one by one from the stream
   * until the subject ends (at most 4 × READ_WINDOW at a time: the caller asks again for more).
   */
  private async subjectFrom(subject: string, sender: string, from: number): Promise<FedMsg[]> {
    const seq = Math.max(1, from);
    let feed = this.feeds.get(subject);
    if (feed && (await feed)?.usable === false) feed = undefined; // stopped: opened again from here
    if (!feed) {
      const opened = new SubjectFeed(this.js, `${this.prefix}_OUT`, subject, seq, () => this.sentListeners.forEach((l) => l(sender))).open();
      void opened.then((f) => this.liveFeeds.set(subject, f), () => undefined);
      feed = opened.catch(() => (this.feeds.delete(subject), null));
      this.feeds.set(subject, feed);
    }
    // What the feed holds; when that was the subject's end as the consumer last saw it, no
    // request (a publish since comes with the feed's next kick). Else, and when the feed
    // holds nothing (read-your-writes: a publish just acknowledged), the stream itself
    // from where the feed ends: one request that finds nothing when the feed had it all.
    const f = await feed;
    let out: FedMsg[] = f?.after(seq) ?? [];
    if (out.length > 0 && f!.caughtUp) return out;
    // A publish heard and not passed on yet: the feed usually has it a moment later (the
    // stream stores it, then the consumer sends it). Waiting that moment saves asking the
    // stream, which the router did on most round trips when the machine was slow (a pass
    // kicked by the host's port ran before the feed had the commit).
    const unfed = f?.usable ? this.unfed(subject, f) : 0;
    if (unfed > 0) {
      await f!.receivedAtLeast(f!.received + unfed, this.feedWaitMs);
      out = f!.after(seq) ?? [];
      if (out.length > 0 && f!.caughtUp && this.unfed(subject, f!) <= 0) return out;
    }
    const next = out.length > 0 ? out.at(-1)!.seq + 1 : seq;
    // Nor when the stream had nothing from here at the last read and no publish on the
    // subject was heard since: one since would have been heard (a publish through this
    // connection before its acknowledgement), or reaches the feed and kicks a pass. This
    // saves the request that finds nothing on the subject a sender does not use (an agent's
    // sends, a client's commit records) on every pass.
    // Not trusted for longer than FEED_TRUST_POLLS polls (a feed that stalled costs a delay).
    if (this.hearing > 0 && f?.usable && this.unfed(subject, f) <= 0 && this.trusts(this.readEnd.get(subject), next)) return out;
    this.heardSinceRead.set(subject, { heard: 0, fedAt: f?.received ?? 0 });
    const reading = { at: Date.now(), hearing: this.hearing > 0, connection: this.connection };
    for (let at = next; ; ) {
      const m = await this.nextOn(`${this.prefix}_OUT`, subject, at);
      if (!m) {
        if (reading.hearing && this.hearing > 0) this.readEnd.set(subject, { seq: at, at: reading.at, connection: reading.connection });
        break;
      }
      out.push({ seq: m.seq, subject: m.subject, data: m.data });
      at = m.seq + 1;
      if (out.length >= 4 * READ_WINDOW) break; // the caller asks again for more
    }
    return out;
  }

  /** Publishes heard on `subject` since its last read of the stream that `feed` has not passed on. */
  private unfed(subject: string, feed: SubjectFeed): number {
    const h = this.heardSinceRead.get(subject);
    return h ? h.heard - (feed.received - h.fedAt) : 0;
  }

  /**
   * The first message on `subject` at or after `seq`, or null. Every read of the transport
   * asks the stream's leader (STREAM.MSG.GET), never a direct get: with replicas a direct
   * get may be answered by a follower that is behind (one that just came back), and a
   * commit restored from it would be an old one.
   */
  private async nextOn(stream: string, subject: string, seq: number): Promise<StoredMsg | null> {
    try {
      return await this.jsm.streams.getMessage(stream, { seq: Math.max(1, seq), next_by_subj: subject } as unknown as { seq: number });
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  // ---- inboxes -------------------------------------------------------------------------

  private inbox(id: string): Promise<InboxState> {
    let s = this.inboxes.get(id);
    if (!s) {
      s = this.openInbox(id);
      this.inboxes.set(id, s);
      s.catch(() => this.inboxes.delete(id));
    }
    return s;
  }

  private async openInbox(id: string): Promise<InboxState> {
    let last: number;
    try {
      last = (await this.jsm.streams.info(this.inboxStream(id))).state.last_seq;
    } catch (err) {
      if (isNotFound(err)) throw new HiveError('E_UNKNOWN_AGENT', `No inbox for "${id}" (stream ${this.inboxStream(id)} does not exist)`);
      throw err;
    }
    // The ids of the last DEDUPE_HORIZON entries: the same horizon as the filesystem's inbox
    // logs (doneCap), however long the inbox has grown.
    const ids = new Set<string>();
    for (const e of await this.readStored(id, Math.max(0, last - DEDUPE_HORIZON))) ids.add(e.id);
    return { last, ids, queue: Promise.resolve() };
  }

  async deliver(recipient: string, messages: HiveMessage[]): Promise<DeliveryOutcome[]> {
    const state = await this.inbox(recipient);
    const run = state.queue.then(async () => {
      const outcomes: DeliveryOutcome[] = [];
      const fresh: HiveMessage[] = [];
      const inBatch = new Set<string>();
      for (const m of messages) {
        if ((state.ids.has(m.id) && !plantActive('no-idempotency')) || inBatch.has(m.id)) outcomes.push({ status: 'duplicate', id: m.id } as DeliveryOutcome);
        else {
          inBatch.add(m.id);
          fresh.push(m);
          outcomes.push(null as unknown as DeliveryOutcome);
        }
      }
      let acks;
      try {
        acks = await this.publishInOrder(recipient, state, fresh);
      } catch (err) {
        // Some of the batch may have landed: the next delivery reads the inbox again.
        this.inboxes.delete(recipient);
        throw err;
      }
      let k = 0;
      for (let i = 0; i < outcomes.length; i++) {
        if (outcomes[i] !== null) continue;
        const m = fresh[k]!;
        const ack = acks[k++]!;
        addRecent(state.ids, m.id, DEDUPE_HORIZON);
        outcomes[i] = ack === 'duplicate' ? ({ status: 'duplicate', id: m.id } as DeliveryOutcome) : ({ status: 'delivered', id: m.id, seq: ack } as DeliveryOutcome);
      }
      if (fresh.length > 0) this.links.get(recipient)?.notify();
      return outcomes;
    });
    state.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Appends `fresh` to the inbox in order; each publish expects the inbox's last sequence,
   * so a write by another deliverer in between (two hosts' routers deliver to one inbox in
   * cluster mode) fails it instead of interleaving. Then the deliverer catches up on what
   * the other wrote (its ids count for the duplicate check) and goes on. The publishes of a
   * batch are pipelined, chained by message id so they land in order or not at all.
   */
  private async publishInOrder(recipient: string, state: InboxState, fresh: HiveMessage[]): Promise<(number | 'duplicate')[]> {
    const out: (number | 'duplicate' | undefined)[] = fresh.map(() => undefined);
    for (let round = 0; ; round++) {
      // What another deliverer wrote since, as far as the inbox's feed (kept once the inbox
      // was seen shared) has pushed it here: learnt first, so the publish expects the right
      // last sequence and a message the other wrote is a duplicate here.
      const held = this.shared.heldAfter(recipient, state.last);
      if (held.length > 0) {
        for (const e of await this.entriesOf(recipient, held)) addRecent(state.ids, e.id, DEDUPE_HORIZON);
        state.last = Math.max(state.last, held.at(-1)!.seq);
      }
      const left = fresh.flatMap((_, k) => (out[k] === undefined ? [k] : []));
      for (const k of left) if (state.ids.has(fresh[k]!.id) && !plantActive('no-idempotency')) out[k] = 'duplicate'; // written by the other deliverer
      const todo = left.filter((k) => out[k] === undefined);
      if (todo.length === 0) return out as (number | 'duplicate')[];
      // Chained: the first expects the inbox's last sequence, each next one the message
      // before it as the last one stored. One that lands is right after its predecessor,
      // whoever wrote that; a write by anyone else in between fails it.
      const before = state.last;
      // A fresh Nats-Msg-Id per attempt (the chain needs one): JetStream's own duplicate
      // check never answers for us. A duplicate ack would claim a store it may not have made
      // (a seq-0 duplicate after a leader change): our ids and the expectations are the check.
      const attemptIds = todo.map((k) => `${fresh[k]!.id}~${randomUUID().slice(0, 8)}`);
      const results = await Promise.allSettled(
        todo.map((k, n) =>
          this.js.publish(this.inboxSubject(recipient), enc.encode(JSON.stringify(fresh[k]!)), {
            msgID: attemptIds[n]!,
            expect: n === 0 ? { lastSequence: state.last } : { lastMsgID: attemptIds[n - 1]! },
          }),
        ),
      );
      let conflict: unknown = null;
      results.forEach((r, n) => {
        const k = todo[n]!;
        if (r.status === 'rejected') conflict ??= r.reason;
        else if (r.value.duplicate || r.value.seq <= 0) conflict ??= new Error(`wrong last sequence: an unexpected duplicate ack (seq ${r.value.seq})`);
        else {
          out[k] = r.value.seq;
          addRecent(state.ids, fresh[k]!.id, DEDUPE_HORIZON); // known at once: a later failure of the batch must not forget it
          state.last = Math.max(state.last, r.value.seq);
        }
      });
      if (conflict === null) continue;
      if (!/wrong last (sequence|msg ?id)/i.test(errorMessage(conflict)) || round > 1_000) throw conflict;
      // Catch up on what the other deliverer wrote since this round began (ours that landed
      // in it too): its ids count for the duplicate check. The stream's last sequence is in
      // its answer to a wrong expected one ("wrong last sequence: 42"), else asked for.
      const reported = /wrong last sequence: (\d+)/i.exec(errorMessage(conflict));
      const last = reported ? Number(reported[1]) : await this.lastSeqOf(recipient);
      const written = await this.shared.since(recipient, before + 1, last, (from, to) => this.storedRange(recipient, from, to));
      for (const e of await this.entriesOf(recipient, written)) addRecent(state.ids, e.id, DEDUPE_HORIZON);
      state.last = Math.max(state.last, last);
    }
  }

  private async lastSeqOf(recipient: string): Promise<number> {
    return (await this.jsm.streams.info(this.inboxStream(recipient))).state.last_seq;
  }

  /** The inbox's entries after `afterSeq`, each repeat of an earlier copy's id marked `duplicate`. */
  async read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]> {
    return this.markRepeats(recipient, afterSeq, await this.readStored(recipient, afterSeq, limit));
  }

  /**
   * Marks the repeats in `entries` (read after `afterSeq`) with the inbox's RepeatMarker,
   * shared by every reader of this instance: whether an entry repeats depends on the inbox
   * alone. The first read from a seq the marker has not seen looks at the REPEAT_LOOKBACK
   * entries before it.
   */
  async markRepeats(recipient: string, afterSeq: number, entries: InboxEntry[]): Promise<InboxEntry[]> {
    // The planted bug "no idempotency" turns this check off too: the run must still fail.
    if (plantActive('no-idempotency')) return entries;
    // Nothing read, nothing to tell: an idle agent's fetch (10,000 of them at a cluster's
    // start) costs no look back.
    if (entries.length === 0) return entries;
    let marker = this.repeats.get(recipient);
    if (!marker) this.repeats.set(recipient, (marker = new RepeatMarker()));
    const gap = marker.gapBefore(afterSeq);
    if (gap) marker.seed(await this.readRange(recipient, gap.from, gap.to), gap);
    return marker.mark(entries, afterSeq);
  }

  /** Forgets an inbox's repeat marker (its agent's link closed here): the next reader looks back again. */
  dropRepeats(recipient: string): void {
    this.repeats.delete(recipient);
  }

  /** The inbox's entries after `afterSeq` as stored (up to `limit`). */
  async readStored(recipient: string, afterSeq: number, limit = Infinity): Promise<InboxEntry[]> {
    const stream = this.inboxStream(recipient);
    if (!Number.isFinite(limit)) {
      let last: number;
      try {
        last = (await this.jsm.streams.info(stream)).state.last_seq;
      } catch (err) {
        if (isNotFound(err)) return [];
        throw err;
      }
      return this.readRange(recipient, afterSeq + 1, last);
    }
    // An agent's turn: the first entry alone (an idle inbox costs one request), then
    // windows growing from 4 (one request in flight costs two round trips, a backlog few).
    // The first is the next message at or after the cursor, not a get of cursor+1: a seq
    // missing there (deleted by hand) would otherwise stop the reader for good. One request
    // is consistent (the stream stores seqs in order); the gets of a window run in parallel,
    // so a missing seq in one may be a publish not stored yet that a later seq's get found
    // stored: the window ends there, and the next read's first request steps over a real hole.
    const first = await this.nextOn(stream, this.inboxSubject(recipient), afterSeq + 1);
    if (!first) return [];
    const got: StoredMsg[] = [first];
    const upTo = first.seq + limit - 1;
    for (let from = first.seq + 1, window = 4; from <= upTo; from += window, window = Math.min(READ_WINDOW, window * 4)) {
      const seqs = Array.from({ length: Math.min(window, upTo - from + 1) }, (_, i) => from + i);
      const batch = await Promise.all(seqs.map((seq) => this.getStored(stream, seq)));
      const missing = batch.indexOf(null);
      got.push(...(batch.slice(0, missing < 0 ? batch.length : missing) as StoredMsg[]));
      if (missing >= 0) break;
    }
    return this.entriesOf(recipient, got.map((m) => ({ seq: m.seq, subject: m.subject, data: m.data })));
  }

  /**
   * The inbox's entries with seqs `from`…`to`, all known to be stored (at or below a last
   * seq the stream reported, or before an entry already read): a missing one is a hole,
   * read past. At most READ_WINDOW gets in flight (thousands at once would outrun their
   * timeouts).
   */
  async readRange(recipient: string, from: number, to: number): Promise<InboxEntry[]> {
    return this.entriesOf(recipient, await this.storedRange(recipient, from, to));
  }

  /** readRange's messages as stored, not parsed. */
  private async storedRange(recipient: string, from: number, to: number): Promise<FedMsg[]> {
    const stream = this.inboxStream(recipient);
    const got: FedMsg[] = [];
    for (let at = Math.max(1, from); at <= to; at += READ_WINDOW) {
      const seqs = Array.from({ length: Math.min(READ_WINDOW, to - at + 1) }, (_, i) => at + i);
      for (const m of await Promise.all(seqs.map((seq) => this.getStored(stream, seq)))) if (m) got.push({ seq: m.seq, subject: m.subject, data: m.data });
    }
    return got;
  }

  private getStored(stream: string, seq: number): Promise<StoredMsg | null> {
    return this.jsm.streams.getMessage(stream, { seq }).catch((err) => (isNotFound(err) ? null : Promise.reject(err)));
  }

  /** Inbox messages as entries; one that is not a valid message is dead-lettered (its seq stays a gap). */
  async entriesOf(recipient: string, msgs: FedMsg[]): Promise<InboxEntry[]> {
    const stream = this.inboxStream(recipient);
    const entries: InboxEntry[] = [];
    for (const m of msgs) {
      const where = `${stream}#${m.seq}`;
      const raw = dec.decode(m.data);
      let parsed;
      try {
        parsed = parseMessage(JSON.parse(raw));
      } catch (err) {
        parsed = { ok: false as const, error: new HiveError('E_BAD_MESSAGE', `Not JSON: ${errorMessage(err)}`) };
      }
      if (parsed.ok) entries.push({ seq: m.seq, id: parsed.message.id, ref: where, message: parsed.message });
      else await this.storeDead(`inbox-${token(recipient)}-${m.seq}.json`, raw, { error: parsed.error.message, code: parsed.error.code, source: where });
    }
    return entries;
  }

  /** A feed of the agent's inbox from `seq` on (null when it cannot be opened now). */
  openInboxFeed(recipient: string, seq: number, onMessage: () => void): Promise<SubjectFeed | null> {
    return new SubjectFeed(this.js, this.inboxStream(recipient), this.inboxSubject(recipient), seq, onMessage).open().catch(() => null);
  }

  async cursor(recipient: string): Promise<number> {
    return (await this.lastCommit(recipient))?.record.context.cursor ?? 0;
  }

  async depth(recipient: string): Promise<number> {
    const [last, cursor] = await Promise.all([this.lastSeqOf(recipient).catch((err) => (isNotFound(err) ? 0 : Promise.reject(err))), this.cursor(recipient)]);
    return Math.max(0, last - cursor);
  }

  async lastCommit(agent: string): Promise<{ seq: number; record: CommitRecord } | null> {
    try {
      const m = await this.jsm.streams.getMessage(`${this.prefix}_OUT`, { last_by_subj: this.commitSubject(agent) });
      return m ? { seq: m.seq, record: m.json<CommitRecord>() } : null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async publishCommit(record: CommitRecord, lastSubjectSeq: number): Promise<number> {
    try {
      // No msgID: the duplicate window would answer a stale owner's commit N with the real
      // owner's ack for its commit N. The expected last sequence is the fence.
      const ack = await this.js.publish(this.commitSubject(record.agent), enc.encode(JSON.stringify(record)), {
        expect: { lastSubjectSequence: lastSubjectSeq },
      });
      return ack.seq;
    } catch (err) {
      if (/wrong last sequence/i.test(errorMessage(err))) {
        // Our own publish may have landed and only its ack been lost (a retry): then it stands.
        const last = await this.lastCommit(record.agent);
        if (last && last.record.owner === record.owner && last.record.commit === record.commit) return last.seq;
        throw new HiveError('E_CONFLICT', `Agent "${record.agent}" was committed by another owner since commit ${record.commit - 1}: this one may not commit (${errorMessage(err)})`, { cause: err });
      }
      throw err;
    }
  }

  notify(agents: Iterable<string>): void {
    for (const id of agents) this.links.get(id)?.notify();
  }

  release(sender: string): void {
    for (const subject of [this.commitSubject(sender), `${this.prefix}.send.${token(sender)}`]) {
      const feed = this.feeds.get(subject);
      if (!feed) continue;
      this.feeds.delete(subject);
      this.liveFeeds.delete(subject);
      this.readEnd.delete(subject);
      this.heardSinceRead.delete(subject);
      void feed.then((f) => f?.close());
    }
  }

  async setup(): Promise<{ serverVersion: string; replicas: number }> {
    const out = await this.jsm.streams.info(`${this.prefix}_OUT`);
    return { serverVersion: this.nc.info?.version ?? 'unknown', replicas: out.config.num_replicas ?? 1 };
  }

  onSent(listener: (sender: string) => void): () => void {
    // Core subscriptions hear every publish at once; the feeds say when what was heard can be read.
    const subs = ['commit', 'send'].map((kind) => {
      const head = `${this.prefix}.${kind}.`;
      return this.nc.subscribe(`${head}*`, {
        // A subject with a working feed is routed when the feed has it (a pass then needs no request).
        callback: (_err, msg) => {
          const sender = senderOfSubject(msg.subject);
          const feed = this.liveFeeds.get(msg.subject);
          const since = this.heardSinceRead.get(msg.subject);
          if (since) since.heard++;
          else this.heardSinceRead.set(msg.subject, { heard: 1, fedAt: feed?.received ?? 0 });
          if (!feed?.usable) return listener(sender);
          // The feed passes the publish on a moment after it is heard. One that still has not
          // passed on all it was heard published since the subject's last read a poll
          // interval later has stalled (its consumer lost, not yet noticed): the sender gets
          // a pass, which reads the stream (a publish the stream refused counts too: one
          // pass too many, never a message less).
          if (this.stallChecks.has(msg.subject)) return;
          this.stallChecks.set(msg.subject, setTimeout(() => {
            this.stallChecks.delete(msg.subject);
            if (open && this.unfed(msg.subject, feed) > 0) listener(sender);
          }, this.pollMs).unref());
        },
      });
    });
    this.sentListeners.add(listener);
    this.hearing++;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.hearing--;
      subs.forEach((s) => s.unsubscribe());
      this.sentListeners.delete(listener);
    };
  }

  // ---- the agent's side ----------------------------------------------------------------

  agent(id: string): AgentLink {
    this.links.get(id)?.close();
    const link = new JetStreamAgentLink(this, id, () => {
      if (this.links.get(id) !== link) return;
      this.links.delete(id);
      this.dropRepeats(id);
    });
    this.links.set(id, link);
    return link;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of [...this.links.values()]) l.close();
    for (const f of this.feeds.values()) void f.then((x) => x?.close());
    this.shared.clear();
    for (const t of this.stallChecks.values()) clearTimeout(t);
    void this.nc.close();
  }

  async drain(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const l of [...this.links.values()]) l.close();
    for (const f of this.feeds.values()) void f.then((x) => x?.close());
    this.shared.clear();
    for (const t of this.stallChecks.values()) clearTimeout(t);
    await this.nc.drain();
  }
}

class JetStreamAgentLink implements AgentLink {
  readonly conversation: ConversationStore;
  private commitNo = 0;
  /** The stream sequence of the agent's last commit record (what the next commit expects). */
  private lastSeq = 0;
  private restored = false;
  private readonly owner = randomUUID();
  private readonly listeners = new Set<() => void>();
  private sub: Subscription | null = null;
  private poll: NodeJS.Timeout | null = null;
  private feed: SubjectFeed | null = null;
  /**
   * The ids of deliveries heard on the inbox's subject and not yet read (from the feed or the
   * stream) since the last read of the stream. A publish the stream refused stays here until
   * that next read: it costs a request, never a message.
   */
  private readonly heard = new Set<string>();
  /** Where and when a read of the stream last found nothing (while deliveries were heard). */
  private readEnd: { seq: number; at: number; connection: number } | null = null;
  private closed = false;

  constructor(
    private readonly t: JetStreamTransportImpl,
    readonly agentId: string,
    private readonly onClose: () => void,
  ) {
    this.conversation = new JetStreamConversation(t.files, `conversation.${token(agentId)}`, this.owner);
  }

  async restore(): Promise<RestoredAgent> {
    const last = await this.t.lastCommit(this.agentId);
    this.restored = true;
    if (!last) {
      this.commitNo = 0;
      this.lastSeq = 0;
      return { from: 'fresh', commit: 0, context: { agentId: this.agentId, cursor: 0, handled: 0, turns: 0, brainState: null, timers: [] }, lastSession: [], messages: [] };
    }
    this.commitNo = last.record.commit;
    this.lastSeq = last.seq;
    return { from: 'state', commit: last.record.commit, context: last.record.context, lastSession: last.record.session ?? [], messages: last.record.messages ?? [] };
  }

  async fetch(afterSeq: number, limit?: number): Promise<InboxEntry[]> {
    return this.t.markRepeats(this.agentId, afterSeq, await this.fetchEntries(afterSeq, limit));
  }

  private async fetchEntries(afterSeq: number, limit?: number): Promise<InboxEntry[]> {
    const feed = await this.feedFrom(afterSeq + 1);
    const held = feed?.after(afterSeq + 1, limit) ?? [];
    // Only the run of seqs right after the cursor: a feed that skipped one (its consumer
    // started again further on) must not make the agent skip it too; the stream has it.
    const fed = contiguousFrom(held, afterSeq + 1);
    const whole = fed.length === held.length;
    const entries = await this.t.entriesOf(this.agentId, fed);
    for (const e of entries) this.heard.delete(e.id);
    // All the feed holds was the inbox's end as its consumer last saw it: no request (an
    // entry since wakes the agent again once the feed has it).
    if ((limit !== undefined && fed.length >= limit) || (fed.length > 0 && whole && feed!.caughtUp)) return entries;
    // Nor when the stream had nothing from here at the last read and no delivery was heard
    // since (the turn after a reply, an idle poll): one since reaches the feed and wakes
    // the agent. Not trusted for longer than FEED_TRUST_POLLS polls.
    const next = fed.length > 0 ? fed.at(-1)!.seq + 1 : afterSeq + 1;
    if (this.sub && whole && this.nothingNewFrom(next)) return entries;
    // Then from the stream where the feed ends: a publish may be in the stream before the
    // consumer passes it on (one request that finds nothing when the feed had it all).
    this.heard.clear();
    const reading = { seq: next, at: Date.now(), hearing: this.sub !== null, connection: this.t.connection };
    const rest = await this.t.readStored(this.agentId, next - 1, limit === undefined ? undefined : limit - fed.length);
    if (rest.length === 0 && reading.hearing && this.sub) this.readEnd = { seq: reading.seq, at: reading.at, connection: reading.connection };
    return [...entries, ...rest];
  }

  /** The inbox feed covering `seq` (opened there the first time; again if the cursor went back). */
  private async feedFrom(seq: number): Promise<SubjectFeed | null> {
    if (this.closed) return null;
    if (this.feed?.usable && this.feed.start <= seq) return this.feed;
    this.feed?.close();
    const feed = await this.t.openInboxFeed(this.agentId, seq, () => this.notify());
    if (this.closed) {
      feed?.close(); // the link closed while it opened: nobody would read it
      return null;
    }
    this.feed = feed;
    return feed;
  }

  async commit(context: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): Promise<number> {
    if (!this.restored) throw new HiveError('E_CONFLICT', `The link of agent "${this.agentId}" commits before its restore`);
    const record: CommitRecord = {
      version: 1,
      agent: this.agentId,
      commit: this.commitNo + 1,
      context,
      messages,
      session: session ?? [],
      owner: this.owner,
      committed_at: new Date().toISOString(),
    };
    this.lastSeq = await this.t.publishCommit(record, this.lastSeq);
    this.commitNo = record.commit;
    return record.commit;
  }

  onWork(listener: () => void): () => void {
    this.listeners.add(listener);
    // A delivery is a publish on the inbox's subject: every subscriber sees it, wherever it runs.
    // A replicated stream may not have stored it yet when the subscriber hears it, and a
    // fetch then finds nothing: a poll makes sure a missed one costs latency, never a message.
    // The feed wakes the agent once it has the entry (a fetch then costs one round trip);
    // the subject's publishes only while there is no working feed.
    this.sub ??= this.t.nc.subscribe(this.t.inboxSubject(this.agentId), {
      callback: (_err, msg) => {
        this.heard.add(messageIdOf(msg.headers?.get('Nats-Msg-Id')));
        if (!this.feed?.usable) this.notify();
      },
    });
    // A tick wakes the agent only when a fetch could find something the feed did not bring:
    // a delivery heard and not read, no working feed, or a "nothing there" no longer
    // trusted (FEED_TRUST_POLLS polls old, another connection, or disconnected: an idle
    // agent learns of a shortage). Waking it at every tick (an actor step and a fetch per
    // agent) was most of an idle cluster machine's CPU (docs/architecture.md, "onWork").
    this.poll ??= setInterval(() => {
      if (this.mayHaveWork()) this.notify();
    }, this.t.pollMs);
    this.poll.unref();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.quiet();
    };
  }

  notify(): void {
    for (const l of this.listeners) l();
  }

  /** The feed works, no delivery was heard and not read, and the stream's last "nothing there" from at or before `next` is still trusted. */
  private nothingNewFrom(next: number): boolean {
    return !!this.feed?.usable && this.heard.size === 0 && this.t.trusts(this.readEnd, next);
  }

  private mayHaveWork(): boolean {
    return !this.nothingNewFrom(this.readEnd?.seq ?? 0);
  }

  /** The connection came back: the feed is opened again at the next fetch, which reads the stream. */
  dropFeed(): void {
    this.feed?.close();
    this.feed = null;
    this.readEnd = null;
    this.notify();
  }

  private quiet(): void {
    this.sub?.unsubscribe();
    this.sub = null;
    this.readEnd = null;
    this.heard.clear();
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.quiet();
    this.feed?.close();
    this.feed = null;
    this.onClose();
  }
}

/**
 * The message id of a delivery heard, from its `Nats-Msg-Id` (`<id>~<attempt>`, see
 * publishInOrder): no parse of the body, which may be large. '' for one without (a read
 * then clears it).
 */
function messageIdOf(msgId: string | undefined): string {
  if (!msgId) return '';
  const cut = msgId.lastIndexOf('~');
  return cut > 0 ? msgId.slice(0, cut) : msgId;
}

// Every operation of the transport and of its links: NATS not answering is a shortage
// (reachable), never a crash.
type Methods = Record<string, (...args: unknown[]) => Promise<unknown>>;
function guard(proto: object, names: string[]): void {
  const methods = proto as Methods;
  for (const name of names) {
    const inner = methods[name]!;
    methods[name] = function (this: unknown, ...args: unknown[]) {
      return reachable(name, () => inner.apply(this, args));
    };
  }
}
guard(JetStreamTransportImpl.prototype, ['ensureAgent', 'send', 'pending', 'settle', 'reject', 'deadLetterCopy', 'deliver', 'read', 'cursor', 'depth', 'setup']);
guard(JetStreamAgentLink.prototype, ['restore', 'fetch', 'commit']);

/** What `conversation.<agent>` holds: the replica and which link saved it. */
interface SavedConversation {
  owner: string;
  replica: ConversationReplica;
}

/** An agent's conversation in KV, fenced by the revision its owner last read or wrote. */
class JetStreamConversation implements ConversationStore {
  private revision: number | null = null;

  constructor(
    private readonly files: FencedFiles,
    private readonly key: string,
    private readonly owner: string,
  ) {}

  async load(): Promise<ConversationReplica | null> {
    const v = await reachable('conversation load', () => this.files.get(this.key));
    this.revision = v?.revision ?? 0;
    return v ? (JSON.parse(v.data.toString('utf8')) as SavedConversation).replica : null;
  }

  async save(replica: ConversationReplica): Promise<void> {
    if (this.revision === null) throw new HiveError('E_CONFLICT', `${this.key} is saved before it was loaded`);
    const value = (r: ConversationReplica) => Buffer.from(JSON.stringify({ owner: this.owner, replica: r } satisfies SavedConversation));
    let r = replica;
    for (let attempt = 0; ; attempt++) {
      try {
        this.revision = await reachable('conversation save', () => this.files.put(this.key, this.revision!, value(r)));
        return;
      } catch (err) {
        const e = err as HiveError;
        if (e.details?.tooLarge && attempt < 12) {
          // Too large to keep at all (over MAX_BLOB_BYTES gzipped): the history goes first (a restore then briefs from
          // conversation.jsonl), then the older half of conversation.jsonl, until it fits.
          r = r.history !== null ? { ...r, history: null } : { ...r, conversation: newerHalf(r.conversation) };
          continue;
        }
        if (e.code !== 'E_CONFLICT' || attempt >= 12) throw err;
        const now = await reachable('conversation load', () => this.files.get(this.key));
        const saved = now ? (JSON.parse(now.data.toString('utf8')) as SavedConversation) : null;
        // Our own save may have landed and only its answer been lost (a retry): then it stands.
        if (now && saved?.owner === this.owner && saved.replica.commit === r.commit) {
          this.revision = now.revision;
          return;
        }
        // An older conversation saved since we loaded: a stale owner that resumed after this
        // link restored. Our commit is newer and was fenced, so ours replaces it.
        if (!now || (saved && saved.replica.commit < r.commit)) {
          this.revision = now?.revision ?? 0;
          continue;
        }
        throw err;
      }
    }
  }
}

/** The newer half of a JSON-lines text (whole lines). */
function newerHalf(text: string): string {
  const lines = text.split('\n').filter((l) => l.length > 0);
  return lines.slice(Math.floor(lines.length / 2)).map((l) => `${l}\n`).join('');
}
