import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JetStreamClient } from '@nats-io/jetstream';
import { SharedInboxes } from '../src/queue/jetstream-shared-inboxes.ts';
import type { FedMsg } from '../src/queue/jetstream-feed.ts';

/**
 * Which inboxes a deliverer keeps a feed of (src/queue/jetstream-shared-inboxes.ts), over a
 * stand-in for JetStream that records the consumers opened and closed and lets the test push
 * messages into them. The reads of the stream are a stand-in too, recording what they were asked.
 */
function fakeJetStream() {
  const consumers = new Map<string, { push: (m: FedMsg) => void; closed: boolean }>();
  let opened = 0;
  const js = {
    consumers: {
      async get(stream: string, opts: { opt_start_seq: number }) {
        opened++;
        const queue: FedMsg[] = [];
        let wake: (() => void) | null = null;
        const entry = { closed: false, push: (m: FedMsg) => (queue.push(m), wake?.()) };
        consumers.set(stream, entry);
        return {
          async consume() {
            return {
              close: async () => {
                entry.closed = true;
                wake?.();
              },
              async *[Symbol.asyncIterator]() {
                for (;;) {
                  while (queue.length > 0) {
                    const m = queue.shift()!;
                    yield { seq: m.seq, subject: m.subject, data: m.data, info: { pending: queue.length } };
                  }
                  if (entry.closed) return;
                  await new Promise<void>((r) => (wake = r));
                }
              },
            };
          },
          start: opts.opt_start_seq,
        };
      },
    },
  } as unknown as JetStreamClient;
  return { js, consumers, opened: () => opened };
}

const msg = (seq: number): FedMsg => ({ seq, subject: 'p.inbox.x', data: new TextEncoder().encode(`m${seq}`) });
const settle = () => new Promise((r) => setTimeout(r, 5));

afterEach(() => {
  vi.useRealTimers();
});

describe('shared inboxes: a feed per inbox another deliverer writes to', () => {
  it('an inbox gets a feed at its second conflict within 10 s (the first is read back from the stream); then what the other wrote is learnt from the feed, holes and all read from the stream', async () => {
    const nats = fakeJetStream();
    const shared = new SharedInboxes(nats.js, (id) => `S_${id}`, (id) => `p.inbox.${id}`, 20);
    const reads: [number, number][] = [];
    const readRange = async (from: number, to: number) => (reads.push([from, to]), Array.from({ length: to - from + 1 }, (_, i) => msg(from + i)));

    expect((await shared.since('x', 1, 2, readRange)).map((m) => m.seq)).toEqual([1, 2]);
    expect(nats.opened()).toBe(0); // one conflict: no consumer
    expect((await shared.since('x', 4, 4, readRange)).map((m) => m.seq)).toEqual([4]);
    expect(nats.opened()).toBe(1); // the second: a feed from seq 4 on
    await settle();
    const feed = nats.consumers.get('S_x')!;
    for (const s of [4, 5, 6]) feed.push(msg(s));
    await settle();
    expect(shared.heldAfter('x', 4).map((m) => m.seq)).toEqual([5, 6]); // learnt before publishing, no read
    reads.length = 0;
    feed.push(msg(7));
    feed.push(msg(9)); // 8 missing (deleted by hand): the feed answers up to 7, the stream the rest
    await settle();
    expect((await shared.since('x', 7, 9, readRange)).map((m) => m.seq)).toEqual([7, 8, 9]);
    expect(reads).toEqual([[8, 9]]);
  });

  it('at most 64 feeds: the one used least lately makes room only when it was not used within 10 s; otherwise the new inbox is read from the stream', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const nats = fakeJetStream();
    const shared = new SharedInboxes(nats.js, (id) => `S_${id}`, (id) => `p.inbox.${id}`, 1);
    const readRange = async () => [];
    const conflictTwice = async (id: string) => {
      await shared.since(id, 1, 0, readRange);
      await shared.since(id, 1, 0, readRange);
    };
    for (let i = 0; i < 64; i++) await conflictTwice(`a${i}`);
    expect(nats.opened()).toBe(64);
    await conflictTwice('late'); // every feed used just now: none closed, none opened
    expect(nats.opened()).toBe(64);
    expect([...nats.consumers.values()].some((c) => c.closed)).toBe(false);
    vi.setSystemTime(Date.now() + 11_000);
    await conflictTwice('later');
    expect(nats.opened()).toBe(65);
    await settle();
    expect(nats.consumers.get('S_a0')!.closed).toBe(true); // the least lately used went
  });
});
