import type { InboxEntry } from './inbox.ts';

/** How many message ids a marker remembers. */
const REMEMBERED = 2_000;
/**
 * How many entries before the first read's start a marker looks at (`seedFrom`): the two
 * copies of a message that a repeated chained publish makes land within one routing batch.
 */
export const REPEAT_LOOKBACK = 64;

/**
 * Tells a repeated entry of one JetStream inbox: the same message id at a later seq, which
 * one writer per inbox never makes but two deliverers can when nats-server lets two chained
 * publishes with one expected sequence through together (issue 4320, 2.9 clustered). The
 * repeat is marked `duplicate`: its reader moves past it without handling or showing it
 * (docs/architecture.md, "The message contract"). Bounded: the last REMEMBERED ids.
 *
 * @example
 * const m = new RepeatMarker();
 * if (m.needsSeed(cursor)) m.seed(await readBefore(cursor), cursor);
 * const entries = m.mark(await readAfter(cursor));
 */
export class RepeatMarker {
  /** Message id → the seq of its first copy. */
  private readonly first = new Map<string, number>();
  /** The highest seq this marker has seen: reads from at or below it need no seed. */
  private seenThrough = 0;

  /** Whether a read after `afterSeq` should first seed the entries before it. */
  needsSeed(afterSeq: number): boolean {
    return afterSeq > this.seenThrough;
  }

  /** Remembers the entries up to `through` that come before a read (a seed): none is returned. */
  seed(entries: InboxEntry[], through: number): void {
    for (const e of entries) this.remember(e);
    this.seenThrough = Math.max(this.seenThrough, through);
  }

  /** `entries` with each repeat of an id seen at an earlier seq marked `duplicate`. */
  mark(entries: InboxEntry[]): InboxEntry[] {
    return entries.map((e) => {
      const first = this.remember(e);
      return first !== e.seq ? { ...e, duplicate: true as const } : e;
    });
  }

  /** Records `e` (unless its id is known) and returns the seq of its id's first copy. */
  private remember(e: InboxEntry): number {
    this.seenThrough = Math.max(this.seenThrough, e.seq);
    const first = this.first.get(e.id);
    if (first !== undefined && first <= e.seq) return first;
    this.first.set(e.id, e.seq);
    if (this.first.size > REMEMBERED) this.first.delete(this.first.keys().next().value!);
    return e.seq;
  }
}
