import type { InboxEntry } from './inbox.ts';

/** How many message ids a marker remembers. */
const REMEMBERED = 2_000;
/** How many separate runs of seqs a marker keeps as seen (the lowest are forgotten first). */
const RUNS = 64;
/**
 * How many entries before a read's start a marker must have seen (`gapBefore`): the two
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
 * It keeps which seqs it has seen as runs (`[from, to]`), not one high-water mark: a reader
 * with a lower cursor than one before it must still have the entries before its own start
 * looked at, or a repeat of one of them would pass as a first copy.
 *
 * @example
 * const m = new RepeatMarker();
 * const gap = m.gapBefore(cursor);
 * if (gap) m.seed(await readRange(gap.from, gap.to), gap);
 * const entries = m.mark(await readAfter(cursor), cursor);
 */
export class RepeatMarker {
  /** Message id → the seq of its first copy. */
  private readonly first = new Map<string, number>();
  /** Runs of seqs seen, sorted and disjoint, inclusive. */
  private seen: [number, number][] = [];

  /**
   * The seqs among the REPEAT_LOOKBACK before a read after `afterSeq` that this marker has
   * not seen (the lowest to the highest of them), or null when there are none.
   */
  gapBefore(afterSeq: number): { from: number; to: number } | null {
    let from = Math.max(1, afterSeq - REPEAT_LOOKBACK + 1);
    let to = afterSeq;
    for (const [a, b] of this.seen) if (a <= from && b >= from) from = b + 1;
    for (const [a, b] of [...this.seen].reverse()) if (a <= to && b >= to) to = a - 1;
    return from <= to ? { from, to } : null;
  }

  /** Remembers the entries of a seed (seqs `from`…`to`, nothing returned). */
  seed(entries: InboxEntry[], range: { from: number; to: number }): void {
    this.cover(range.from, range.to); // first: an id forgotten while remembering uncovers its seq
    for (const e of entries) this.remember(e);
  }

  /** `entries`, read after `afterSeq`, with each repeat of an id seen at an earlier seq marked `duplicate`. */
  mark(entries: InboxEntry[], afterSeq: number): InboxEntry[] {
    if (entries.length > 0) this.cover(afterSeq + 1, entries.at(-1)!.seq); // first, as in seed
    return entries.map((e) => {
      const first = this.remember(e);
      return first !== e.seq ? Object.assign({}, e, { duplicate: true as const }) : e;
    });
  }

  /** Records `e` (unless its id is known) and returns the seq of its id's first copy. */
  private remember(e: InboxEntry): number {
    const first = this.first.get(e.id);
    if (first !== undefined && first <= e.seq) return first;
    this.first.set(e.id, e.seq);
    if (this.first.size > REMEMBERED) {
      // The oldest id is forgotten, and so is its seq's place among those seen: a later
      // read from below it looks there again instead of missing a repeat of it.
      const [id, seq] = this.first.entries().next().value!;
      this.first.delete(id);
      this.uncover(seq);
    }
    return e.seq;
  }

  /** Takes `seq` out of the runs seen (splitting the run that holds it). */
  private uncover(seq: number): void {
    this.seen = this.seen.flatMap(([a, b]): [number, number][] => {
      if (seq < a || seq > b) return [[a, b]];
      return ([[a, seq - 1], [seq + 1, b]] as [number, number][]).filter(([x, y]) => x <= y);
    });
  }

  /** Adds seqs `from`…`to` to the runs seen, merging the runs they touch. */
  private cover(from: number, to: number): void {
    if (from > to) return;
    const runs: [number, number][] = [];
    for (const [a, b] of this.seen) {
      if (b + 1 < from || a > to + 1) runs.push([a, b]);
      else {
        from = Math.min(from, a);
        to = Math.max(to, b);
      }
    }
    runs.push([from, to]);
    runs.sort((x, y) => x[0] - y[0]);
    this.seen = runs.slice(-RUNS);
  }
}
