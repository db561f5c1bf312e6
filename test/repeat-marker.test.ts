import { describe, expect, it } from 'vitest';
import { createMessage } from '../src/protocol/message.ts';
import { RepeatMarker } from '../src/queue/repeat-marker.ts';
import type { InboxEntry } from '../src/queue/inbox.ts';

const m1 = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'one' });
const m2 = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'two' });
const entry = (seq: number, m = m1): InboxEntry => ({ seq, id: m.id, ref: `b#${seq}`, message: m });
const marks = (es: InboxEntry[]) => es.map((e) => [e.seq, e.duplicate ?? false]);

describe('RepeatMarker', () => {
  it('marks a later copy of an id, never the first, however often and in whatever slices the inbox is read', () => {
    const r = new RepeatMarker();
    expect(marks(r.mark([entry(1), entry(2, m2)]))).toEqual([[1, false], [2, false]]);
    expect(marks(r.mark([entry(3)]))).toEqual([[3, true]]);
    expect(marks(r.mark([entry(1), entry(2, m2), entry(3)]))).toEqual([[1, false], [2, false], [3, true]]);
  });

  it('a read from further back finds the earlier copy first: the later one is then the repeat', () => {
    const r = new RepeatMarker();
    expect(marks(r.mark([entry(5)]))).toEqual([[5, false]]);
    expect(marks(r.mark([entry(2), entry(5)]))).toEqual([[2, false], [5, true]]);
  });

  it('a seed tells of copies before the read without returning them; a read at or below what it saw needs none', () => {
    const r = new RepeatMarker();
    expect(r.needsSeed(0)).toBe(false);
    expect(r.needsSeed(4)).toBe(true);
    r.seed([entry(3)], 4);
    expect(r.needsSeed(4)).toBe(false);
    expect(marks(r.mark([entry(5, m2), entry(6)]))).toEqual([[5, false], [6, true]]);
    expect(r.needsSeed(6)).toBe(false);
    expect(r.needsSeed(7)).toBe(true);
  });
});
