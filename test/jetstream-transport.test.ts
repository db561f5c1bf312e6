import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMessage } from '../src/protocol/message.ts';
import type { PendingItem } from '../src/queue/transport.ts';
import { describeTransportConformance } from './conformance/transport.ts';
import { createJetStreamTransport, type JetStreamTransport, type JetStreamTransportOptions } from '../src/queue/jetstream-transport.ts';
import { startNatsServer, type NatsServer } from './helpers/nats-server.ts';
import { connect, jetstreamManager } from '../src/queue/nats.ts';

// One nats-server for the file; each case gets its own prefix (its own streams and buckets).
let server: NatsServer | null = null;
const opened: JetStreamTransport[] = [];
const prefixOf = new WeakMap<object, string>();
let n = 0;

async function open(prefix: string, options: Partial<JetStreamTransportOptions> = {}): Promise<JetStreamTransport> {
  const t = await createJetStreamTransport({ servers: [server!.url], prefix, ...options });
  for (const id of ['a', 'b', 'c']) await t.ensureAgent(id);
  prefixOf.set(t, prefix);
  opened.push(t);
  return t;
}

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const t of opened) t.close();
  await server?.stop();
});
describeTransportConformance(
  'jetstream',
  async () => open(`t${process.pid}_${++n}`),
  async (t) => open(prefixOf.get(t)!),
);

describe('jetstream transport: what it keeps beyond the conformance suite', () => {
  it("dedupe outlives JetStream's duplicate window: a message delivered again after it, by a new instance, is a duplicate", async () => {
    const prefix = `dup${process.pid}`;
    const first = await createJetStreamTransport({ servers: [server!.url], prefix, duplicateWindowMs: 100 });
    opened.push(first);
    await first.ensureAgent('b');
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'once' });
    expect(await first.deliver('b', [m])).toMatchObject([{ status: 'delivered', seq: 1 }]);
    first.close();
    await new Promise((r) => setTimeout(r, 400)); // past the window
    const second = await createJetStreamTransport({ servers: [server!.url], prefix, duplicateWindowMs: 100 });
    opened.push(second);
    expect(await second.deliver('b', [m])).toMatchObject([{ status: 'duplicate' }]);
    expect((await second.read('b', 0)).map((e) => e.id)).toEqual([m.id]);
  });

  it('a stale owner cannot commit: after another link of the agent committed, its commit fails with E_CONFLICT and changes nothing', async () => {
    const prefix = `fence${process.pid}`;
    const hostA = await open(prefix);
    const hostB = await open(prefix);
    const stale = hostA.agent('b');
    const base = await stale.restore();
    const owner = hostB.agent('b');
    await owner.restore();
    await owner.commit({ ...base.context, cursor: 1, turns: 1 }, []);
    await expect(stale.commit({ ...base.context, cursor: 5, turns: 9 }, [createMessage({ from: 'b', to: 'a', act: 'inform', body: 'stale' })])).rejects.toMatchObject({ code: 'E_CONFLICT' });
    expect(await hostA.cursor('b')).toBe(1);
    expect(await hostA.pending('b')).toEqual([]);
  });

  it('a commit whose ack was lost (stored, then a timeout) is tried again and stands once: no second record, no E_CONFLICT, the next commit follows it', async () => {
    const t = await open(`ack${process.pid}`);
    const js = (t as unknown as { js: { publish: (...a: unknown[]) => Promise<unknown> } }).js;
    const publish = js.publish.bind(js);
    let drop = true;
    js.publish = async (...a: unknown[]) => {
      const ack = await publish(...a);
      if (drop && String(a[0]).includes('.commit.')) {
        drop = false;
        throw Object.assign(new Error('timeout'), { name: 'TimeoutError' }); // stored, but the ack never came
      }
      return ack;
    };
    const link = t.agent('a');
    const at = await link.restore();
    const reply = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'once' });
    await expect(link.commit({ ...at.context, cursor: 1 }, [reply])).rejects.toMatchObject({ code: 'E_UNAVAILABLE', details: { shortage: 'nats' } });
    expect(await link.commit({ ...at.context, cursor: 1 }, [reply])).toBe(1); // the retry (the shortage gate's)
    expect(await link.commit({ ...at.context, cursor: 2 }, [])).toBe(2);
    expect((await t.pending('a')).map((p) => p.message?.id)).toEqual([reply.id]);
    expect(await t.cursor('a')).toBe(2);
  });

  it('an inbox holding one message twice (a chained publish let through twice, nats-server issue 4320): the agent\'s link returns the second copy marked duplicate, a re-read of the first is not', async () => {
    const t = await open(`repeat${process.pid}`);
    const m = createMessage({ from: 'a', to: 'b', act: 'request', body: 'once' });
    const after = createMessage({ from: 'a', to: 'b', act: 'request', body: 'next' });
    expect(await t.deliver('b', [m])).toMatchObject([{ status: 'delivered', seq: 1 }]);
    // The second copy, as the race leaves it: straight onto the inbox subject, past the deliverer's check.
    const js = (t as unknown as { js: { publish: (subject: string, data: Uint8Array) => Promise<unknown> } }).js;
    await js.publish(`repeat${process.pid}.inbox.b`, new TextEncoder().encode(JSON.stringify(m)));
    expect(await t.deliver('b', [after])).toMatchObject([{ status: 'delivered', seq: 3 }]);
    const link = t.agent('b');
    await link.restore();
    const got = await link.fetch(0);
    expect(got.map((e) => [e.seq, e.id, e.duplicate ?? false])).toEqual([
      [1, m.id, false],
      [2, m.id, true],
      [3, after.id, false],
    ]);
    expect((await link.fetch(0)).map((e) => e.duplicate ?? false)).toEqual([false, true, false]); // read again: the same answer
    link.close();
  });

  it("a feed that skipped entries (its consumer started again further on) does not make the agent skip them: the link reads them from the stream", async () => {
    const t = await open(`feedgap${process.pid}`);
    const ms = [1, 2, 3].map((i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `m${i}` }));
    await t.deliver('b', ms);
    const link = t.agent('b');
    await link.restore();
    const third = (await t.read('b', 2))[0]!;
    // A feed holding seq 3 alone, caught up as far as it knows.
    const feed = { usable: true, start: 1, caughtUp: true, after: () => [{ seq: 3, subject: `feedgap${process.pid}.inbox.b`, data: new TextEncoder().encode(JSON.stringify(third.message)) }], close: () => undefined };
    (link as unknown as { feed: unknown }).feed = feed;
    expect((await link.fetch(0)).map((e) => [e.seq, e.id])).toEqual(ms.map((m, i) => [i + 1, m.id]));
    link.close();
  });

  it('every reader is told of a repeat, also one that starts after the first copy: a new instance reading the inbox after seq 1 (a client, `hive inbox`, a new owner restored there) gets the second copy marked', async () => {
    const prefix = `repeat2${process.pid}`;
    const t = await open(prefix);
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'once' });
    const after = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'next' });
    await t.deliver('b', [m]);
    const js = (t as unknown as { js: { publish: (subject: string, data: Uint8Array) => Promise<unknown> } }).js;
    await js.publish(`${prefix}.inbox.b`, new TextEncoder().encode(JSON.stringify(m)));
    await t.deliver('b', [after]);
    const reader = await open(prefix); // knows nothing of seq 1 yet
    expect((await reader.read('b', 1)).map((e) => [e.seq, e.duplicate ?? false])).toEqual([
      [2, true],
      [3, false],
    ]);
    const owner = await open(prefix);
    const link = owner.agent('b');
    await link.restore();
    expect((await link.fetch(1)).map((e) => [e.seq, e.duplicate ?? false])).toEqual([
      [2, true],
      [3, false],
    ]);
    link.close();
    expect((await t.read('b', 0)).map((e) => e.duplicate ?? false)).toEqual([false, true, false]);
  });

  it('a seq missing from an inbox (a message deleted by hand) does not stop its agent: its next read steps over the hole (a read does not step over one amid its parallel gets, which could be a publish not stored yet); a whole read skips holes', async () => {
    const t = await open(`hole${process.pid}`);
    const ms = [1, 2, 3, 4, 5].map((i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `m${i}` }));
    await t.deliver('b', ms);
    const jsm = (t as unknown as { jsm: { streams: { deleteMessage(stream: string, seq: number): Promise<boolean> } } }).jsm;
    const stream = (t as unknown as { inboxStream(id: string): string }).inboxStream('b');
    await jsm.streams.deleteMessage(stream, 2);
    await jsm.streams.deleteMessage(stream, 4);
    const link = t.agent('b');
    await link.restore();
    expect((await link.fetch(0, 10)).map((e) => e.seq)).toEqual([1]);
    expect((await link.fetch(1, 10)).map((e) => e.seq)).toEqual([3]);
    expect((await link.fetch(3, 10)).map((e) => e.seq)).toEqual([5]);
    expect(await link.fetch(5, 10)).toEqual([]);
    expect((await t.read('b', 0)).map((e) => e.seq)).toEqual([1, 3, 5]);
    link.close();
  });

  it("a reader's repeat marker looks back only when it has entries to mark, and is dropped with its agent's link", async () => {
    const t = await open(`marker${process.pid}`);
    const repeats = (t as unknown as { repeats: Map<string, unknown> }).repeats;
    await t.deliver('b', [createMessage({ from: 'a', to: 'b', act: 'inform', body: 'one' })]);
    const link = t.agent('b');
    await link.restore();
    expect(await link.fetch(1)).toEqual([]); // an idle agent's fetch
    expect(repeats.has('b')).toBe(false);
    expect((await link.fetch(0)).map((e) => e.seq)).toEqual([1]);
    expect(repeats.has('b')).toBe(true);
    link.close();
    expect(repeats.has('b')).toBe(false);
  });

  it('an item published straight onto a send subject that is not a message is pending with its error, and reject dead-letters it', async () => {
    const t = await open(`junk${process.pid}`);
    const nc = (t as unknown as { nc: { publish(s: string, d: string): void; flush(): Promise<void> } }).nc;
    nc.publish(`junk${process.pid}.send.a`, '{"not":"a message"}');
    await nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    const [item] = await t.pending('a');
    expect(item).toMatchObject({ message: null, error: { code: 'E_BAD_MESSAGE' } });
    await t.reject('a', item!.ref, { error: item!.error!.message, source: 'test' });
    expect(await t.pending('a')).toEqual([]);
  });
});

describe('jetstream transport: conversations kept in the cluster', () => {
  const replica = (commit: number, history: string | null, conversation = '') => ({
    version: 1 as const,
    agent: 'b',
    commit,
    current: { key: '0b5a6f4e-7d1c-4e8a-9f0b-1c2d3e4f5a6b', started_at: '2026-12-02T00:00:00.000Z', commit: 0 },
    history,
    conversation,
  });

  it('what one owner saved, the next one loads; the stale owner\'s save then fails with E_CONFLICT and changes nothing', async () => {
    const prefix = `conv${process.pid}`;
    const [hostA, hostB] = [await open(prefix), await open(prefix)];
    const stale = hostA.agent('b');
    expect(await stale.conversation!.load()).toBeNull();
    await stale.conversation!.save(replica(1, '{"commit":1}'));
    const owner = hostB.agent('b');
    expect(await owner.conversation!.load()).toMatchObject({ commit: 1, history: '{"commit":1}' });
    await owner.conversation!.save(replica(2, '{"commit":2}'));
    await expect(stale.conversation!.save(replica(2, '{"stale":true}'))).rejects.toMatchObject({ code: 'E_CONFLICT' });
    expect(await hostA.agent('c').conversation!.load()).toBeNull(); // another agent's key
    const third = (await open(prefix)).agent('b');
    expect(await third.conversation!.load()).toMatchObject({ commit: 2, history: '{"commit":2}' });
  });

  it('a save whose answer was lost (stored, then a timeout) is tried again and stands: no E_CONFLICT, the next save follows it', async () => {
    const t = await open(`convack${process.pid}`);
    const link = t.agent('b');
    await link.conversation!.load();
    const files = t.files as unknown as { put: (...a: unknown[]) => Promise<number> };
    const real = files.put.bind(files);
    let dropped = false;
    files.put = async (...a: unknown[]) => {
      const rev = await real(...a);
      if (!dropped) {
        dropped = true;
        throw Object.assign(new Error('TIMEOUT'), { name: 'TimeoutError' });
      }
      return rev;
    };
    await expect(link.conversation!.save(replica(1, 'h1'))).rejects.toMatchObject({ code: 'E_UNAVAILABLE' });
    await link.conversation!.save(replica(1, 'h1')); // the actor's retry after the shortage
    await link.conversation!.save(replica(2, 'h2'));
    files.put = real;
    expect(await (await open(`convack${process.pid}`)).agent('b').conversation!.load()).toMatchObject({ commit: 2, history: 'h2' });
  });

  it('a stale owner that resumes and saves an older conversation after the new owner loaded does not stop the new owner: its newer save replaces it', async () => {
    const prefix = `convlate${process.pid}`;
    const [hostA, hostB] = [await open(prefix), await open(prefix)];
    const stale = hostA.agent('b');
    await stale.conversation!.load();
    await stale.conversation!.save(replica(1, 'h1'));
    const owner = hostB.agent('b');
    expect(await owner.conversation!.load()).toMatchObject({ commit: 1 });
    await stale.conversation!.save(replica(2, 'stale h2')); // committed 2 before it froze, saved after
    await owner.conversation!.save(replica(3, 'h3'));
    expect(await (await open(prefix)).agent('b').conversation!.load()).toMatchObject({ commit: 3, history: 'h3' });
  });

  it('a conversation too large to keep at all is kept without its history (a restore then briefs from conversation.jsonl)', async () => {
    const t = await open(`convbig${process.pid}`);
    // Up to 256 MiB gzipped is kept whole (test/fenced-files.test.ts); lowered here to reach the trimming.
    t.files.maxBytes = 900 * 1024;
    const link = t.agent('b');
    await link.conversation!.load();
    const { randomBytes } = await import('node:crypto');
    await link.conversation!.save(replica(1, randomBytes(1024 * 1024).toString('base64'), 'user: hi\n'));
    expect(await (await open(`convbig${process.pid}`)).agent('b').conversation!.load()).toMatchObject({ commit: 1, history: null, conversation: 'user: hi\n' });
    // conversation.jsonl alone too large: its newer lines are kept, as many as fit.
    const lines = Array.from({ length: 64 }, (_, i) => `${JSON.stringify({ role: 'user', text: `${i} ${randomBytes(24 * 1024).toString('base64')}` })}\n`).join('');
    await link.conversation!.save(replica(2, null, lines));
    const kept = (await (await open(`convbig${process.pid}`)).agent('b').conversation!.load())!;
    expect(kept.commit).toBe(2);
    const texts = kept.conversation.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text.split(' ')[0]);
    expect(texts.length).toBeGreaterThan(0);
    expect(texts.length).toBeLessThan(64);
    expect(texts.at(-1)).toBe('63');
  });
});

/** Counts the STREAM.MSG.GET requests on `stream` (a subscriber on their subject). */
async function countGets(stream: string): Promise<{ count: () => number; close: () => Promise<void> }> {
  const nc = await connect({ servers: [server!.url] });
  let gets = 0;
  nc.subscribe(`$JS.API.STREAM.MSG.GET.${stream}`, { callback: () => void gets++ });
  await nc.flush();
  return { count: () => gets, close: () => nc.close() };
}

describe('jetstream transport: inboxes shared by two deliverers (two hosts\' routers)', () => {
  it('two machines creating the same hive\'s streams at the same moment both start (the loser of the race tries again)', async () => {
    // Without the retry 2 of 80 pairs failed with "subjects overlap with an existing stream" in a
    // script against one nats-server 2.9.10 (and this suite failed on it twice under full load);
    // alone here the race is rarer: this test catches it only sometimes.
    for (let i = 0; i < 40; i++) {
      const prefix = `race${i}x${process.pid}`;
      const both = await Promise.allSettled([0, 1].map(() => createJetStreamTransport({ servers: [server!.url], prefix })));
      for (const r of both) if (r.status === 'fulfilled') opened.push(r.value);
      expect(both.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok']);
    }
  });

  it('concurrent deliveries from two instances: every id once, seqs gap-free, each deliverer\'s own order kept', async () => {
    const prefix = `shared${process.pid}`;
    const [one, two] = await Promise.all([0, 1].map(async () => {
      const t = await createJetStreamTransport({ servers: [server!.url], prefix });
      opened.push(t);
      await t.ensureAgent('b');
      return t;
    }));
    const fromA = Array.from({ length: 60 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `a${i}` }));
    const fromC = Array.from({ length: 60 }, (_, i) => createMessage({ from: 'c', to: 'b', act: 'inform', body: `c${i}` }));
    const both = fromA.slice(0, 10); // also routed by the other host (a re-run after a crash)
    const batches = (ms: typeof fromA) => Array.from({ length: 6 }, (_, k) => ms.slice(k * 10, k * 10 + 10));
    await Promise.all([
      (async () => { for (const b of batches(fromA)) await one!.deliver('b', b); })(),
      (async () => { for (const b of [both, ...batches(fromC)]) await two!.deliver('b', b); })(),
    ]);
    const entries = await one!.read('b', 0);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(new Set(entries.map((e) => e.id)).size).toBe(120);
    const order = (prefixChar: string) => entries.filter((e) => e.message.body.startsWith(prefixChar)).map((e) => Number(e.message.body.slice(1)));
    expect(order('a')).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(order('c')).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it("a deliverer learns what another wrote to the inbox since it last looked: a message the other delivered is a duplicate here too, after JetStream's window", async () => {
    const prefix = `learn${process.pid}`;
    const open2 = async () => {
      const t = await createJetStreamTransport({ servers: [server!.url], prefix, duplicateWindowMs: 100 });
      opened.push(t);
      await t.ensureAgent('b');
      return t;
    };
    const one = await open2();
    const two = await open2();
    await one.deliver('b', [createMessage({ from: 'a', to: 'b', act: 'inform', body: 'first' })]); // one has read the inbox now
    const fromTwo = Array.from({ length: 5 }, (_, i) => createMessage({ from: 'c', to: 'b', act: 'inform', body: `two ${i}` }));
    await two.deliver('b', fromTwo);
    await new Promise((r) => setTimeout(r, 400)); // past JetStream's own duplicate window
    const again = await one.deliver('b', [...fromTwo, createMessage({ from: 'a', to: 'b', act: 'inform', body: 'new' })]);
    expect(again.map((o) => o.status)).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'delivered']);
    expect((await one.read('b', 0)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("two deliverers taking turns on one inbox (a client whose agents run on two hosts) learn each other's writes from the inbox's feed, not by reading them back; a feed whose consumer is gone falls back to the stream", async () => {
    const prefix = `turns${process.pid}`;
    const open2 = async () => {
      const t = await createJetStreamTransport({ servers: [server!.url], prefix, duplicateWindowMs: 100, feedWaitMs: 200 });
      opened.push(t);
      await t.ensureAgent('b');
      return t;
    };
    const one = await open2();
    const two = await open2();
    const gets = await countGets(`${prefix}_IN_b`);
    // Publishes the inbox refused (another deliverer wrote in between), counted per deliverer.
    let refused = 0;
    for (const t of [one, two]) {
      const js = (t as unknown as { js: { publish: (...a: unknown[]) => Promise<unknown> } }).js;
      const publish = js.publish.bind(js);
      js.publish = (...a: unknown[]) => publish(...a).catch((err) => (refused++, Promise.reject(err)));
    }
    const sent: string[] = [];
    const messages: ReturnType<typeof createMessage>[] = [];
    const take = async (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const m = createMessage({ from: i % 2 ? 'c' : 'a', to: 'b', act: 'inform', body: `turn ${sent.length}` });
        sent.push(m.id);
        messages.push(m);
        const [outcome] = await (i % 2 ? two : one).deliver('b', [m]);
        expect(outcome!.status).toBe('delivered');
        await new Promise((r) => setTimeout(r, 10)); // a moment between deliveries, as between round trips
      }
    };
    await take(40);
    // Each deliverer reads the other's write back at its first conflicts (its feed opens at
    // the second); before, every turn did: 38 of 40. Once the feed is open, the other's
    // write is learnt before publishing: the publish is not refused (before: 39 of 40 were).
    expect(gets.count()).toBeLessThanOrEqual(8);
    expect(refused).toBeLessThanOrEqual(8);
    // What the other wrote is known here without a read: a duplicate, past JetStream's window.
    await new Promise((r) => setTimeout(r, 300));
    const fromTwo = (await one.read('b', 0)).filter((e) => e.message.from === 'c').map((e) => e.message);
    const readGets = gets.count();
    expect((await one.deliver('b', fromTwo.slice(-3))).map((o) => o.status)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(gets.count()).toBe(readGets);
    // The inbox's consumers removed on the server (as after it started again): the feeds
    // stop passing writes on, and the deliverers read them from the stream instead.
    const nc = await connect({ servers: [server!.url] });
    const jsm = await jetstreamManager(nc);
    for await (const c of jsm.consumers.list(`${prefix}_IN_b`)) await jsm.consumers.delete(`${prefix}_IN_b`, c.name);
    await nc.close();
    await take(10);
    const entries = await one.read('b', 0);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(entries.map((e) => e.id)).toEqual(sent);
    // Everything sent, by either deliverer, delivered again by both: nothing is new.
    for (const t of [one, two]) expect(new Set((await t.deliver('b', messages)).map((o) => o.status))).toEqual(new Set(['duplicate']));
    expect((await one.read('b', 0)).length).toBe(50);
    await gets.close();
  });
});

describe('jetstream transport: a read that found nothing is not made again while nothing was heard', () => {
  const until = async (what: string, done: () => Promise<boolean> | boolean) => {
    for (const deadline = Date.now() + 5_000; !(await done()); await new Promise((r) => setTimeout(r, 20))) if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
  };

  it("an idle agent's fetches ask NATS nothing while its feed works, and its polls wake it only when that is no longer trusted; a delivery by another instance wakes it and is read; after FEED_TRUST_POLLS polls the stream is asked again", async () => {
    const prefix = `idle${process.pid}`;
    const t = await open(prefix, { pollMs: 50 });
    const other = await open(prefix);
    const gets = await countGets(`${prefix}_IN_b`);
    const link = t.agent('b');
    await link.restore();
    const seen: string[] = [];
    let cursor = 0;
    const fetchNew = async () => {
      for (const e of await link.fetch(cursor, 16)) {
        seen.push(e.id);
        cursor = Math.max(cursor, e.seq);
      }
    };
    let wakes = 0;
    link.onWork(() => void (wakes++, fetchNew()));
    await fetchNew(); // opens the feed; its read finds the inbox empty
    await new Promise((r) => setTimeout(r, 100));
    const before = gets.count();
    for (let i = 0; i < 20; i++) await fetchNew(); // the agent's turns find nothing new: no request
    expect(gets.count() - before).toBe(0);
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'from the other machine' });
    await other.deliver('b', [m]);
    await until('the delivery is read', () => seen.includes(m.id));
    // Idle for 1.2 s with a poll every 50 ms (24 polls, each a fetch): the stream is asked
    // again once the last read is older than 10 polls (500 ms), not at every poll.
    const idle = gets.count();
    const wakesBefore = wakes;
    await new Promise((r) => setTimeout(r, 1_200));
    expect(gets.count() - idle).toBeGreaterThanOrEqual(1);
    expect(gets.count() - idle).toBeLessThanOrEqual(4);
    // Nor is the idle agent woken at every poll: only when its "nothing there" is no longer trusted.
    expect(wakes - wakesBefore).toBeGreaterThanOrEqual(1);
    expect(wakes - wakesBefore).toBeLessThanOrEqual(6);
    expect(seen).toEqual([m.id]);
    link.close();
    await gets.close();
  });

  it("the router's passes over a sender with nothing new ask NATS nothing once its subjects' ends were read; a send by another instance is pending after it is heard, one by this instance at once (read-your-writes)", async () => {
    const prefix = `quiet${process.pid}`;
    const t = await open(prefix);
    const other = await open(prefix);
    const heard: string[] = [];
    const off = t.onSent((sender) => heard.push(sender));
    const gets = await countGets(`${prefix}_OUT`);
    await t.pending('a'); // opens the feeds of a's subjects; its reads find them empty
    await new Promise((r) => setTimeout(r, 100));
    const before = gets.count();
    for (let i = 0; i < 20; i++) expect(await t.pending('a')).toEqual([]);
    expect(gets.count() - before).toBe(0);
    const fromOther = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'sent elsewhere' });
    await other.send([fromOther]);
    await until('the send is pending', async () => (await t.pending('a')).some((p) => p.message?.id === fromOther.id));
    await t.settle('a', (await t.pending('a')).map((p) => p.ref));
    const own = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'sent here' });
    await t.send([own]);
    expect((await t.pending('a')).map((p) => p.message?.id)).toEqual([own.id]);
    off();
    await gets.close();
  });

  it("a pass over a sender whose publish was heard but is not in the feed yet waits for the feed instead of asking the stream", async () => {
    const prefix = `fedwait${process.pid}`;
    // A generous wait, so that the test does not depend on how fast the consumer is under load.
    const t = await open(prefix, { feedWaitMs: 500 });
    const other = await open(prefix);
    const off = t.onSent(() => undefined);
    const gets = await countGets(`${prefix}_OUT`);
    await t.pending('a'); // opens the feeds of a's subjects
    await new Promise((r) => setTimeout(r, 100));
    const before = gets.count();
    // The pass runs the moment the router's connection hears the publish (as one kicked by a
    // host's port does when the machine is slow): the consumer has not passed it on yet.
    const nc = (t as unknown as { nc: { subscribe(s: string, o: { callback: () => void }): { unsubscribe(): void }; flush(): Promise<void> } }).nc;
    const passes: Promise<PendingItem[]>[] = [];
    // (A microtask later: the transport's own subscription has heard it by then.)
    const sub = nc.subscribe(`${prefix}.send.a`, { callback: () => queueMicrotask(() => passes.push(t.pending('a'))) });
    await nc.flush(); // subscribed on the server before the first publish
    for (let i = 0; i < 5; i++) {
      const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: `sent elsewhere ${i}` });
      await other.send([m]);
      await until('the pass', () => passes.length === i + 1);
      const pending = await passes[i]!;
      expect(pending.map((p) => p.message?.id)).toEqual([m.id]); // the router's pass has it at once
      await t.settle('a', pending.map((p) => p.ref));
    }
    // Before, each of these passes found the subject heard and asked the stream.
    expect(gets.count() - before).toBeLessThanOrEqual(1);
    sub.unsubscribe();
    off();
    await gets.close();
  });

  it("a feed whose consumer is gone (as after the server started again) does not hold a heard send back: its sender gets a pass within a poll interval and the send is pending", async () => {
    const prefix = `stall${process.pid}`;
    const t = await open(prefix, { pollMs: 100 });
    const other = await open(prefix);
    const heard: number[] = [];
    const off = t.onSent(() => heard.push(Date.now()));
    await t.pending('a'); // opens the feeds of a's subjects
    // Their consumers removed on the server: the feeds look usable and will pass nothing on.
    const nc = await connect({ servers: [server!.url] });
    const jsm = await jetstreamManager(nc);
    for await (const c of jsm.consumers.list(`${prefix}_OUT`)) await jsm.consumers.delete(`${prefix}_OUT`, c.name);
    await new Promise((r) => setTimeout(r, 50));
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'while the feed is stalled' });
    const t0 = Date.now();
    await other.send([m]);
    await until('a pass for the sender', () => heard.length > 0);
    expect(heard[0]! - t0).toBeLessThan(1_000);
    expect((await t.pending('a')).map((p) => p.message?.id)).toContain(m.id);
    off();
    await nc.close();
  });
});
