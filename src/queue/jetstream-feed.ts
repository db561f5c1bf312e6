import { DeliverPolicy, type ConsumerMessages, type JetStreamClient } from '@nats-io/jetstream';

/** A feed holding more than this unread stops (the caller reads from the stream instead). */
const MAX_HELD = 10_000;
const MAX_HELD_BYTES = 32 * 1024 * 1024;

/** One message of a stream as a feed holds it. */
export interface FedMsg {
  seq: number;
  subject: string;
  data: Uint8Array;
}

/**
 * A stream's messages on one subject from `start` on, pushed by an ordered consumer
 * (docs/architecture.md, "Transport on JetStream"): what an agent's link reads its inbox
 * from, and the router an agent's commit records, instead of one request per message.
 * An ordered consumer is gap-free and in stream order (it starts again by itself where it
 * stopped when its server goes away), so the feed holds every message on the subject from
 * `start` up to the newest it was given; `after` answers from that without a request. It
 * may be a moment behind the stream (a publish is acknowledged before the consumer passes
 * it on), so the caller reads on from the stream where the feed ends: one request that
 * finds nothing when the feed had it all. A feed that stopped for good answers null.
 */
export class SubjectFeed {
  private readonly held: FedMsg[] = [];
  private messages: ConsumerMessages | null = null;
  private closed = false;
  private stopped = false;
  private passedAll = false;
  private heldBytes = 0;
  /** How many messages the consumer has passed on: a caller that heard a publish tells a stalled feed by this not moving. */
  received = 0;
  private waiters: { count: number; done: () => void }[] = [];

  constructor(
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly subject: string,
    /** The first stream sequence the feed covers. */
    readonly start: number,
    private readonly onMessage: () => void,
    /** Holding more than this unread stops the feed (the caller reads from the stream instead). */
    private readonly limits: { messages: number; bytes: number } = { messages: MAX_HELD, bytes: MAX_HELD_BYTES },
  ) {}

  async open(): Promise<this> {
    const consumer = await this.js.consumers.get(this.stream, {
      filter_subjects: this.subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: Math.max(1, this.start),
    });
    const messages = await consumer.consume({ max_messages: 512 });
    this.messages = messages;
    if (this.closed) void messages.close();
    void (async () => {
      for await (const m of messages) {
        this.received++;
        this.held.push({ seq: m.seq, subject: m.subject, data: m.data });
        if (this.waiters.length > 0) this.wake();
        this.heldBytes += m.data.length;
        this.passedAll = m.info.pending === 0;
        // Nobody reads it any more (its agent runs elsewhere now): let it go rather than grow.
        if (this.held.length > this.limits.messages || this.heldBytes > this.limits.bytes) return this.close();
        this.onMessage();
      }
    })().catch(() => undefined).finally(() => {
      this.stopped = true; // every read goes to the stream from now on
      this.wake(true);
    });
    return this;
  }

  /**
   * The held messages with seq ≥ `from`, up to `limit`, in order (those before `from` are
   * let go: the caller never asks for them again). Null when the feed cannot answer: it
   * starts after `from`, or its consumer stopped for good.
   */
  after(from: number, limit = Infinity): FedMsg[] | null {
    if (this.closed || this.stopped || from < this.start) return null;
    let drop = 0;
    while (drop < this.held.length && this.held[drop]!.seq < from) this.heldBytes -= this.held[drop++]!.data.length;
    if (drop > 0) this.held.splice(0, drop);
    return Number.isFinite(limit) ? this.held.slice(0, limit) : [...this.held];
  }

  /**
   * The consumer had nothing more when it passed on the newest held message: what the feed
   * holds is the subject's end as of then. A publish since may not be here yet; its
   * message reaches the feed (and `onMessage`) a moment later.
   */
  get caughtUp(): boolean {
    return this.passedAll;
  }

  /**
   * Resolves once the consumer has passed on `count` messages in all (`received`), or after
   * `ms`, or when the feed closes or stops: a reader that heard a publish waits a moment for
   * it here rather than asking the stream.
   */
  receivedAtLeast(count: number, ms: number): Promise<void> {
    if (this.received >= count || !this.usable) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const waiter = { count, done };
      this.waiters.push(waiter);
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  private wake(all = false): void {
    const due = all ? this.waiters : this.waiters.filter((w) => w.count <= this.received);
    if (due.length === 0) return;
    this.waiters = all ? [] : this.waiters.filter((w) => w.count > this.received);
    for (const w of due) w.done();
  }

  /** False once closed or stopped: open a new one. */
  get usable(): boolean {
    return !this.closed && !this.stopped;
  }

  close(): void {
    this.closed = true;
    this.wake(true);
    this.held.length = 0;
    this.heldBytes = 0;
    void this.messages?.close().catch(() => undefined);
  }
}

/**
 * The leading run of `msgs` with seqs `from`, `from + 1`, …: a hole ends it (a feed whose
 * consumer started again further on, or a seq deleted by hand). What lies past it is read
 * from the stream, never skipped.
 */
export function contiguousFrom(msgs: FedMsg[], from: number): FedMsg[] {
  let n = 0;
  while (n < msgs.length && msgs[n]!.seq === from + n) n++;
  return n === msgs.length ? msgs : msgs.slice(0, n);
}
