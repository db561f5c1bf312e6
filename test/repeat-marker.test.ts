import { describe, expect, it } from 'vitest';
import { createMessage } from '../src/protocol/message.ts';
import { RepeatMarker, REPEAT_LOOKBACK } from '../src/queue/repeat-marker.ts';
import type { InboxEntry } from '../src/queue/inbox.ts';

const m1 = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'one' });
const m2 = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'two' });
const entry = (seq: number, m = m1): InboxEntry => ({ seq, id: m.id, ref: `b#${seq}`, message: m });
const marks = (es: InboxEntry[]) => es.map((e) => [e.seq, e.duplicate ?? false]);
/** An inbox as a reader sees it: seq → entry (`m1` where not given). */
const inbox = (n: number, at: Record<number, ReturnType<typeof createMessage>> = {}) =>
  Array.from({ length: n }, (_, i) => entry(i + 1, at[i + 1] ?? createMessage({ from: 'a', to: 'b', act: 'inform', body: `filler ${i + 1}` })));

/** What a transport does (markRepeats): seed the gap the marker names, then mark the read. */
function read(r: RepeatMarker, all: InboxEntry[], afterSeq: number, limit = Infinity): InboxEntry[] {
  const gap = r.gapBefore(afterSeq);
  if (gap) r.seed(all.filter((e) => e.seq >= gap.from && e.seq <= gap.to), gap);
  return r.mark(all.filter((e) => e.seq > afterSeq).slice(0, limit), afterSeq);
}

describe('RepeatMarker', () => {
  it('marks a later copy of an id, never the first, however often and in whatever slices the inbox is read', () => {
    const r = new RepeatMarker();
    expect(marks(r.mark([entry(1), entry(2, m2)], 0))).toEqual([[1, false], [2, false]]);
    expect(marks(r.mark([entry(3)], 2))).toEqual([[3, true]]);
    expect(marks(r.mark([entry(1), entry(2, m2), entry(3)], 0))).toEqual([[1, false], [2, false], [3, true]]);
  });

  it('a read from further back finds the earlier copy first: the later one is then the repeat', () => {
    const r = new RepeatMarker();
    expect(marks(r.mark([entry(5)], 4))).toEqual([[5, false]]);
    expect(marks(r.mark([entry(2), entry(5)], 1))).toEqual([[2, false], [5, true]]);
  });

  it('names the seqs before a read it has not seen, and only those', () => {
    const r = new RepeatMarker();
    expect(r.gapBefore(0)).toBeNull();
    expect(r.gapBefore(4)).toEqual({ from: 1, to: 4 });
    r.seed([entry(3)], { from: 1, to: 4 });
    expect(r.gapBefore(4)).toBeNull();
    expect(marks(r.mark([entry(5, m2), entry(6)], 4))).toEqual([[5, false], [6, true]]);
    expect(r.gapBefore(6)).toBeNull();
    expect(r.gapBefore(8)).toEqual({ from: 7, to: 8 });
    expect(r.gapBefore(200)).toEqual({ from: 200 - REPEAT_LOOKBACK + 1, to: 200 });
  });

  it('a reader with a lower cursor than one before it still has the entries before its own start looked at (one high-water mark missed this repeat)', () => {
    const dup = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'twice' });
    const all = inbox(120, { 5: dup, 20: dup });
    const r = new RepeatMarker();
    read(r, all, 100); // a reader far ahead first (seeds 37…100)
    expect(marks(read(r, all, 10).filter((e) => e.seq === 20))).toEqual([[20, true]]);
  });

  it('whatever order readers come in, a copy is marked exactly when an earlier seq holds its id (within the look-back)', () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0), (seed >>> 8) % n);
    for (let round = 0; round < 200; round++) {
      const ids = Array.from({ length: 60 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `r${round} ${i}` }));
      const all = Array.from({ length: 80 }, (_, i) => entry(i + 1, ids[rand(ids.length)]));
      const firstSeq = new Map<string, number>();
      for (const e of all) if (!firstSeq.has(e.id)) firstSeq.set(e.id, e.seq);
      const r = new RepeatMarker();
      for (let k = 0; k < 6; k++) {
        const after = rand(80);
        for (const e of read(r, all, after, 1 + rand(20))) {
          const earlier = firstSeq.get(e.id)! < e.seq && e.seq - firstSeq.get(e.id)! <= REPEAT_LOOKBACK;
          if (earlier) expect(e.duplicate, `round ${round}: seq ${e.seq} repeats ${firstSeq.get(e.id)}`).toBe(true);
          if (firstSeq.get(e.id) === e.seq) expect(e.duplicate ?? false).toBe(false);
        }
      }
    }
  });

  it('an id it forgot (past the last 2,000) is looked for again: its seq no longer counts as seen', () => {
    const dup = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'twice' });
    const all = inbox(2_100, { 5: dup, 30: dup });
    const r = new RepeatMarker();
    expect(marks(read(r, all, 0).filter((e) => e.seq === 30))).toEqual([[30, true]]);
    // Every id of seqs 1…100 is forgotten by now; a reader from 20 must look back again.
    expect(marks(read(r, all, 20, 20).filter((e) => e.seq === 30))).toEqual([[30, true]]);
  });
});
