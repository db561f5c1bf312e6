import { describe, expect, it } from 'vitest';
import { PendingOutboxes } from '../src/router/pending-outboxes.ts';

const ids = (n: number) => new Set(Array.from({ length: n }, (_, i) => `a-${i}`));

describe('router: pending outboxes', () => {
  it('a start reads every outbox; a sender already queued needs no second request; a pass takes the queue', () => {
    const p = new PendingOutboxes();
    const all = new Set(['alice', 'bob', 'carol']);
    expect(p.sweeping()).toBe(true); // the first pass reads every outbox
    expect(p.mark(['alice'])).toBe(true); // asked: in the next pass, whatever the sweep
    expect(p.mark(['alice'])).toBe(false); // …once
    expect(p.due('alice')).toBe(true);
    expect([...p.take(all)].sort()).toEqual(['alice', 'bob', 'carol']);
    expect(p.sweeping()).toBe(false);
    expect(p.due('alice')).toBe(false);

    expect(p.mark(['alice'])).toBe(true); // a pass must be asked for
    expect(p.mark(['alice'])).toBe(false); // …once
    expect(p.mark(['alice', 'bob'])).toBe(true); // bob is new
    expect([...p.take(all)].sort()).toEqual(['alice', 'bob']);

    // After a pass took the queue, the same sender needs a new request.
    expect(p.mark(['alice'])).toBe(true);
    expect(p.mark()).toBe(true); // every outbox, always a request
    expect([...p.take(all)].sort()).toEqual(['alice', 'bob', 'carol']);
  });

  it('senders a pass left unfinished stay queued without a request (the pass goes again itself)', () => {
    const p = new PendingOutboxes();
    p.take(new Set());
    p.keep(['alice']);
    expect(p.due('alice')).toBe(true);
    expect(p.mark(['alice'])).toBe(false);
    expect([...p.take(new Set(['alice', 'bob']))]).toEqual(['alice']);
  });

  it('a sweep of every outbox goes a slice per pass, and a sender that asks is in the very next pass', () => {
    const all = ids(1_000);
    const p = new PendingOutboxes({ sweepSlice: 100 });
    const first = p.take(all);
    expect(first.size).toBe(100);
    expect(p.sweeping()).toBe(true);
    // Still to come in this sweep, 900 outboxes (nine passes) away; it asks: it goes in the
    // next pass, not when the sweep comes to it.
    expect(p.due('a-999')).toBe(false);
    expect(p.mark(['a-999'])).toBe(true);
    expect(p.mark(['a-999'])).toBe(false);
    p.mark(['client']);
    const second = p.take(all);
    expect(second.has('client')).toBe(true);
    expect(second.has('a-999')).toBe(true);
    // Beside senders that asked, a small slice (16): their messages wait for the whole pass.
    expect(second.size).toBe(18);
    const seen = new Set([...first, ...second]);
    while (p.sweeping()) for (const s of p.take(all)) seen.add(s);
    expect(seen.size).toBe(1_001); // every outbox once, and the client
  });

  it('the safety poll reads every outbox of a small hive, and a rotating share of a large one', () => {
    const small = new PendingOutboxes({ pollSlice: 512 });
    small.take(ids(10));
    expect(small.poll(ids(10))).toBe(true);
    expect(small.take(ids(10)).size).toBe(10);

    const all = ids(2_000);
    const big = new PendingOutboxes({ sweepSlice: 10_000, pollSlice: 500 });
    big.take(all);
    const read = new Map<string, number>();
    for (let tick = 0; tick < 8; tick++) {
      expect(big.poll(all)).toBe(true);
      const taken = big.take(all);
      expect(taken.size).toBe(500); // bounded per tick, whatever the hive's size
      for (const s of taken) read.set(s, (read.get(s) ?? 0) + 1);
    }
    expect(read.size).toBe(2_000); // in 4 ticks every outbox was read, in 8 each twice
    expect([...read.values()].every((n) => n === 2)).toBe(true);
  });

  it('a sender in the safety poll share of a big hive that asks goes in the next pass, not when the sweep reaches it', () => {
    const all = ids(10_000);
    const p = new PendingOutboxes({ pollSlice: 512 });
    while (p.sweeping()) p.take(all); // the start's sweep is over
    expect(p.poll(all)).toBe(true); // a-0 … a-511 join a sweep
    p.take(all); // one slice of it read
    expect(p.mark(['a-500'])).toBe(true); // a file in its outbox, or its commit: it asked
    expect(p.take(all).has('a-500')).toBe(true);
    let later = 0;
    while (p.sweeping()) for (const s of p.take(all)) if (s === 'a-500') later += 1;
    expect(later).toBe(0); // read once, in the pass after it asked
  });
});

describe('router: light marks (a commit or a hive.send() told in memory)', () => {
  it('a light mark reads no files of its sender; a file event for it still counts, and a full mark or a sweep upgrades it', () => {
    const p = new PendingOutboxes();
    const all = new Set(['alice', 'bob', 'carol']);
    p.take(all); // the start's sweep, done
    expect(p.mark(['alice'], { files: false })).toBe(true);
    expect(p.due('alice')).toBe(false); // the outbox watcher must not drop alice's file events
    expect(p.mark(['alice'], { files: false })).toBe(false); // a pass is asked for already
    expect([...p.take(all)]).toEqual(['alice']);
    expect([...p.lightOnes()]).toEqual(['alice']);

    // A file event after the light mark: the same pass, files read.
    expect(p.mark(['bob'], { files: false })).toBe(true);
    expect(p.mark(['bob'])).toBe(false); // no second request: the pass asked for will read it
    expect(p.due('bob')).toBe(true);
    expect(p.mark(['bob'], { files: false })).toBe(false); // and it stays a full look
    expect([...p.take(all)]).toEqual(['bob']);
    expect([...p.lightOnes()]).toEqual([]);

    // A sender still waiting in a sweep is read whole, however it asked.
    const q = new PendingOutboxes({ sweepSlice: 1 });
    q.take(new Set()); // the start's sweep, over nobody
    q.mark(); // every outbox
    expect([...q.take(all)]).toEqual(['alice']); // a slice of one; bob and carol wait in the sweep
    expect(q.mark(['carol'], { files: false })).toBe(true);
    expect([...q.take(all)].sort()).toEqual(['bob', 'carol']); // carol out of the sweep: not light
    expect([...q.lightOnes()]).toEqual([]);
  });

  it('files can be asked per sender (the router: light only where a working watch would report a file)', () => {
    const p = new PendingOutboxes();
    const all = new Set(['alice', 'bob']);
    p.take(all);
    expect(p.mark(['alice', 'bob'], { files: (s) => s === 'bob' })).toBe(true);
    expect(p.due('alice')).toBe(false);
    expect(p.due('bob')).toBe(true);
    expect([...p.take(all)].sort()).toEqual(['alice', 'bob']);
    expect([...p.lightOnes()]).toEqual(['alice']);
  });

  it('the poll reads the folder of a sender due only lightly', () => {
    const p = new PendingOutboxes({ pollSlice: 2 });
    const all = new Set(['a', 'b', 'c', 'd']);
    p.take(all);
    p.mark(['a'], { files: false });
    expect(p.poll(all)).toBe(true); // a and b join the sweep
    expect([...p.take(all)].sort()).toEqual(['a', 'b']);
    expect([...p.lightOnes()]).toEqual([]); // a was in the sweep: read whole
  });
});
