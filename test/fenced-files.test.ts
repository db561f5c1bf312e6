import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServer } from './helpers/nats-server.ts';
import { connect } from '../src/queue/nats.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { FencedFiles, MAX_FENCED_BYTES, openFencedFiles } from '../src/queue/jetstream-files.ts';
import type { ConversationReplica } from '../src/session/replica.ts';

// The cluster's files (KV `<prefix>_files`) beyond what one KV value holds: a value over
// MAX_FENCED_BYTES gzipped goes to chunks, the key points at them, and the pointer's write is
// the fenced one. A conversation that large is kept whole, so a failover loses none of it.
let server: NatsServer | null = null;
let nc: NatsConnection | null = null;
let n = 0;
const open: FencedFiles[] = [];

async function bucket(): Promise<{ prefix: string; kv: KV; machine: () => Promise<FencedFiles> }> {
  const prefix = `ff${process.pid}_${++n}`;
  (await createJetStreamTransport({ servers: [server!.url], prefix })).close(); // makes the buckets, as a router does
  const kv = await new Kvm(nc!).open(`${prefix}_files`);
  const machine = async () => {
    const f = await openFencedFiles([server!.url], prefix);
    open.push(f);
    return f;
  };
  return { prefix, kv, machine };
}

/** The keys holding chunks of large values. */
async function chunkKeys(kv: KV): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of await kv.keys('blob.>')) keys.push(k);
  return keys.sort();
}

/** Bytes gzip cannot shrink: over the limit of one value once gzipped. */
const incompressible = (bytes: number) => randomBytes(bytes);

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: [server.url] });
});
afterAll(async () => {
  for (const f of open) await f.close();
  await nc?.close();
  await server?.stop();
});

describe('fenced files larger than one KV value', () => {
  it('a value over the limit is kept in chunks: read back whole by another machine, its key holding only a pointer; replaced, its chunks go', async () => {
    const { kv, machine } = await bucket();
    const [a, b] = [await machine(), await machine()];
    const big = incompressible(3 * 1024 * 1024);
    expect(big.length).toBeGreaterThan(MAX_FENCED_BYTES);
    const r1 = await a.put('conversation.ann', 0, big);
    expect((await b.get('conversation.ann'))?.data.equals(big)).toBe(true);
    const raw = await kv.get('conversation.ann');
    expect(raw!.length).toBeLessThan(1024); // the pointer, not the value
    expect((await chunkKeys(kv)).length).toBe(5); // 3 MiB (+ gzip's framing) in chunks of 768 KiB

    const bigger = incompressible(2 * 1024 * 1024);
    const r2 = await a.put('conversation.ann', r1, bigger);
    expect((await b.get('conversation.ann'))?.data.equals(bigger)).toBe(true);
    expect((await chunkKeys(kv)).length).toBe(3); // the first value's chunks went

    await a.put('conversation.ann', r2, Buffer.from('small again'));
    expect((await b.get('conversation.ann'))?.data.toString()).toBe('small again');
    expect(await chunkKeys(kv)).toEqual([]);
  });

  it('a stale writer of a large value is fenced (E_CONFLICT) and leaves no chunks behind', async () => {
    const { kv, machine } = await bucket();
    const [owner, stale] = [await machine(), await machine()];
    const r1 = await owner.put('conversation.bob', 0, Buffer.from('first'));
    const seenByStale = (await stale.get('conversation.bob'))!.revision;
    expect(seenByStale).toBe(r1);
    const current = incompressible(1536 * 1024);
    await owner.put('conversation.bob', r1, current);
    const before = await chunkKeys(kv);
    await expect(stale.put('conversation.bob', seenByStale, incompressible(1536 * 1024))).rejects.toMatchObject({ code: 'E_CONFLICT' });
    expect(await chunkKeys(kv)).toEqual(before);
    expect((await stale.get('conversation.bob'))?.data.equals(current)).toBe(true);
  });

  it('a pointer write whose answer is lost (it landed) keeps its chunks: the value reads back whole', async () => {
    const { kv } = await bucket();
    // The KV as the writer sees it: the update reaches the server, its answer never comes back.
    const answerLost = Object.assign(Object.create(Object.getPrototypeOf(kv)) as KV, kv, {
      update: async (k: string, v: Uint8Array, rev: number) => {
        await kv.update(k, v, rev);
        throw new Error('TIMEOUT');
      },
    });
    const writer = new FencedFiles(answerLost);
    const r1 = await writer.put('conversation.dee', 0, Buffer.from('first'));
    const big = incompressible(1536 * 1024);
    await expect(writer.put('conversation.dee', r1, big)).rejects.toThrow('TIMEOUT');
    expect((await new FencedFiles(kv).get('conversation.dee'))?.data.equals(big)).toBe(true);
  });

  it('a watch hears a large value whole', async () => {
    const { machine } = await bucket();
    const [writer, watcher] = [await machine(), await machine()];
    const big = incompressible(2 * 1024 * 1024);
    const heard = new Promise<Buffer>((resolve) => {
      void watcher.watch('memory.', (key, v) => key === 'memory.ann' && resolve(v.data));
    });
    await writer.put('memory.ann', 0, big);
    expect((await heard).equals(big)).toBe(true);
  });

  it('a conversation over the old limit (900 KiB gzipped) is loaded on the next machine exactly as saved, history and all', async () => {
    const { prefix } = await bucket();
    const [t1, t2] = [await createJetStreamTransport({ servers: [server!.url], prefix }), await createJetStreamTransport({ servers: [server!.url], prefix })];
    try {
      const first = t1.agent('cara').conversation!;
      expect(await first.load()).toBeNull();
      const lines = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ turn: i, text: incompressible(300).toString('base64') })).join('\n');
      const replica: ConversationReplica = {
        version: 1,
        agent: 'cara',
        commit: 42,
        current: { key: 'session-1', started_at: '2026-12-08T01:00:00.000Z' },
        history: JSON.stringify({ turns: Array.from({ length: 500 }, (_, i) => ({ i, said: incompressible(200).toString('base64') })) }),
        conversation: `${lines}\n`,
      };
      await first.save(replica);
      const next = t2.agent('cara').conversation!;
      expect(await next.load()).toEqual(replica);
    } finally {
      t1.close();
      t2.close();
    }
  });
});
