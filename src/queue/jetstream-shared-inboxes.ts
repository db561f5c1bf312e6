import type { JetStreamClient } from '@nats-io/jetstream';
import { contiguousFrom, SubjectFeed, type FedMsg } from './jetstream-feed.ts';

/** Inboxes a deliverer keeps a feed of at most (the ones another deliverer wrote to most lately). */
const MAX_SHARED_FEEDS = 64;
/** What one of them may hold unread before it stops (the deliverer reads from the stream then). */
const SHARED_FEED_LIMITS = { messages: 2_000, bytes: 1024 * 1024 };
/**
 * An inbox gets a feed at its second conflict within this long (ms), and a feed used this
 * lately is not closed to make room for another: a consumer opened (two API requests, and
 * a consumer the server keeps for minutes after it is let go) must pay for itself.
 */
const SHARED_WINDOW_MS = 10_000;
/** Inboxes whose last conflict is remembered, at most (the oldest are forgotten first). */
const MAX_REMEMBERED = 1_024;

/**
 * A deliverer's view of the inboxes another deliverer also writes to (in cluster mode every
 * host's router delivers to a client's inbox, and to any agent that hears from both hosts;
 * docs/architecture.md, "Transport on JetStream"). A publish expecting an inbox's last
 * sequence fails when the other wrote in between; the deliverer must then learn the ids the
 * other wrote (they count for its duplicate check) before it publishes again. Reading them
 * back costs one STREAM.MSG.GET each, on most round trips of a client whose agents run on two
 * hosts. Instead, a second conflict within SHARED_WINDOW_MS opens an ordered consumer on the
 * inbox (a SubjectFeed) that pushes every later write to this deliverer: `heldAfter` and
 * `since` answer from it (the other's writes are usually there before the next delivery, so
 * the publish is right the first time), and only what the feed does not have yet is read
 * from the stream.
 *
 * At most MAX_SHARED_FEEDS feeds are kept; the one used least lately is closed to make room,
 * unless it was used within SHARED_WINDOW_MS: then no feed is opened (more inboxes shared at
 * once than that read back from the stream, as before, instead of opening and closing
 * consumers in turn).
 */
export class SharedInboxes {
  private readonly feeds = new Map<string, Promise<SubjectFeed | null>>();
  private readonly live = new Map<string, SubjectFeed>();
  /** When each inbox with a feed was last used, and each without one last had a conflict. */
  private readonly usedAt = new Map<string, number>();
  private readonly conflictAt = new Map<string, number>();

  constructor(
    private readonly js: JetStreamClient,
    private readonly streamOf: (recipient: string) => string,
    private readonly subjectOf: (recipient: string) => string,
    /** How long `since` waits for the feed to pass on writes the stream reported (ms). */
    private readonly waitMs: number,
  ) {}

  /**
   * The writes the feed holds after `last` (the deliverer's last known sequence), without a
   * request: what the other deliverer wrote since, to be learnt before publishing. Empty for
   * an inbox with no feed, and when the feed cannot answer from `last + 1` (then a conflict
   * tells, as without a feed). The held ones up to `last` are let go.
   */
  heldAfter(recipient: string, last: number): FedMsg[] {
    const feed = this.live.get(recipient);
    if (!feed) return [];
    const held = contiguousFrom(feed.after(last + 1) ?? [], last + 1);
    if (held.length > 0) this.touch(recipient);
    return held;
  }

  /**
   * The inbox's writes with seqs `from`…`to` (all stored: `to` is a last sequence the stream
   * reported): from the feed, waiting up to `waitMs` for it to pass them on, and the rest
   * through `readRange`. Opens the inbox's feed at `from` when it has none, so the next
   * conflict finds its writes pushed.
   */
  async since(recipient: string, from: number, to: number, readRange: (from: number, to: number) => Promise<FedMsg[]>): Promise<FedMsg[]> {
    const feed = await this.feedOf(recipient, from);
    let got: FedMsg[] = [];
    if (feed && feed.start <= from) {
      got = this.upTo(feed, from, to);
      const have = got.at(-1)?.seq ?? from - 1;
      if (have < to && feed.usable) {
        // Seqs of one inbox stream are contiguous unless someone deleted one by hand: then
        // this waits the whole moment and the stream answers for the rest.
        await feed.receivedAtLeast(feed.received + (to - have), this.waitMs);
        got = this.upTo(feed, from, to);
      }
    }
    const next = got.at(-1)?.seq ?? from - 1;
    return next < to ? [...got, ...(await readRange(next + 1, to))] : got;
  }

  private upTo(feed: SubjectFeed, from: number, to: number): FedMsg[] {
    const held = contiguousFrom(feed.after(from) ?? [], from);
    const end = held.findIndex((m) => m.seq > to);
    return end < 0 ? held : held.slice(0, end);
  }

  private async feedOf(recipient: string, from: number): Promise<SubjectFeed | null> {
    let feed = this.feeds.get(recipient);
    if (feed && !(await feed)?.usable) {
      // Stopped, or it could not be opened: opened again from here.
      this.drop(recipient);
      feed = undefined;
    }
    if (feed) {
      this.touch(recipient);
      return feed;
    }
    if (!this.sharedLately(recipient) || !this.roomForOne()) return null;
    const opened = new SubjectFeed(this.js, this.streamOf(recipient), this.subjectOf(recipient), from, () => undefined, SHARED_FEED_LIMITS).open();
    feed = opened.catch(() => null);
    this.feeds.set(recipient, feed);
    this.usedAt.set(recipient, Date.now());
    void feed.then((f) => {
      if (f && this.feeds.get(recipient) === feed) this.live.set(recipient, f);
    });
    // This conflict is answered by the stream: the feed starts pushing once open.
    return null;
  }

  /** Whether `recipient`'s inbox had a conflict within SHARED_WINDOW_MS before this one (noted now). */
  private sharedLately(recipient: string): boolean {
    const now = Date.now();
    const last = this.conflictAt.get(recipient);
    this.conflictAt.delete(recipient);
    if (last !== undefined && now - last <= SHARED_WINDOW_MS) return true;
    this.conflictAt.set(recipient, now);
    if (this.conflictAt.size > MAX_REMEMBERED) this.conflictAt.delete(this.conflictAt.keys().next().value!);
    return false;
  }

  /** Room for one more feed: there is, or the one used least lately was not used within SHARED_WINDOW_MS (it is closed). */
  private roomForOne(): boolean {
    if (this.feeds.size < MAX_SHARED_FEEDS) return true;
    const oldest = this.feeds.keys().next().value!;
    if (Date.now() - (this.usedAt.get(oldest) ?? 0) <= SHARED_WINDOW_MS) return false;
    this.drop(oldest);
    return true;
  }

  /** Marks the feed as used now: the first in the map is the one closed when there are too many. */
  private touch(recipient: string): void {
    const feed = this.feeds.get(recipient);
    if (!feed) return;
    this.feeds.delete(recipient);
    this.feeds.set(recipient, feed);
    this.usedAt.set(recipient, Date.now());
  }

  /** Closes the feed of `recipient`'s inbox (a later conflict opens it again). */
  drop(recipient: string): void {
    const feed = this.feeds.get(recipient);
    this.feeds.delete(recipient);
    this.live.delete(recipient);
    this.usedAt.delete(recipient);
    void feed?.then((f) => f?.close());
  }

  /** Closes every feed (a reconnect: their consumers may be gone). */
  clear(): void {
    for (const id of [...this.feeds.keys()]) this.drop(id);
  }
}
