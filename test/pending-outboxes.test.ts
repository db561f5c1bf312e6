import { describe, expect, it } from 'vitest';
import { PendingOutboxes } from '../src/router/pending-outboxes.ts';

describe('router: pending outboxes', () => {
  it('a start reads every outbox; a sender already queued needs no second request; a pass takes the queue', () => {
    const p = new PendingOutboxes();
    expect(p.due('alice')).toBe(true); // the first pass reads every outbox
    expect(p.mark(['alice'])).toBe(false);
    expect(p.take()).toBeUndefined();
    expect(p.due('alice')).toBe(false);

    expect(p.mark(['alice'])).toBe(true); // a pass must be asked for
    expect(p.mark(['alice'])).toBe(false); // …once
    expect(p.mark(['alice', 'bob'])).toBe(true); // bob is new
    expect([...p.take()!].sort()).toEqual(['alice', 'bob']);

    // After a pass took the queue, the same sender needs a new request.
    expect(p.mark(['alice'])).toBe(true);
    expect(p.mark()).toBe(true); // the poll: every outbox, always a request
    expect(p.due('carol')).toBe(true);
    expect(p.take()).toBeUndefined();
  });

  it('senders a pass left unfinished stay queued without a request (the pass goes again itself)', () => {
    const p = new PendingOutboxes();
    p.take();
    p.keep(['alice']);
    expect(p.due('alice')).toBe(true);
    expect(p.mark(['alice'])).toBe(false);
    expect([...p.take()!]).toEqual(['alice']);
  });
});
