import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { bigMemory } from './helpers/memory.ts';
import { startNatsServer, type NatsServer } from './helpers/nats-server.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { writeJsonAtomic } from '../src/fs/atomic.ts';
import { clusterFilePath } from '../src/supervisor/cluster-file.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { openFencedFiles, type FencedFiles } from '../src/queue/jetstream-files.ts';
import { memoryKey, startMemoryMirror } from '../src/memory/cluster-memory.ts';
import { remember } from '../src/memory/remember.ts';
import { condenseAgentMemory } from '../src/memory/reflect.ts';
import { externalInbox } from '../src/queue/external-inbox.ts';
import { createMessage } from '../src/protocol/message.ts';

// Cluster mode beyond the message path: memory.md (the cluster's KV holds it, each
// machine's folder a mirror) and an agent CLI's inbox (hooks socket, hive mcp).
// Each "machine" here is a hive folder with a cluster.json naming the test's nats-server.
let server: NatsServer | null = null;
let n = 0;
const open: FencedFiles[] = [];

async function machines(count: number): Promise<{ roots: string[]; files: FencedFiles }> {
  const prefix = `mem${process.pid}_${++n}`;
  (await createJetStreamTransport({ servers: [server!.url], prefix })).close(); // makes the buckets, as a router does
  const roots: string[] = [];
  for (let i = 0; i < count; i++) {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'ann', name: 'Ann', brain: { kind: 'echo' } });
    writeJsonAtomic(clusterFilePath(root), { host: `h${i + 1}`, servers: [server!.url], prefix, local: [], placement: {}, serverVersion: '', replicas: 1, survives: [], warnings: [], checked_at: '' });
    roots.push(root);
  }
  const files = await openFencedFiles([server!.url], prefix);
  open.push(files);
  return { roots, files };
}

const stored = async (files: FencedFiles) => (await files.get(memoryKey('ann')))?.data.toString('utf8') ?? null;
const local = (root: string) => fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8');

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const f of open) await f.close();
  await server?.stop();
});

describe('memory.md in cluster mode', () => {

  it('remember writes to the cluster and mirrors at once; concurrent writes from two machines all land, each once', async () => {
    const { roots, files } = await machines(2);
    await Promise.all(Array.from({ length: 12 }, (_, i) => remember(roots[i % 2]!, 'ann', `Fact ${i}`)));
    const text = (await stored(files))!;
    for (let i = 0; i < 12; i++) expect(text.match(new RegExp(`Fact ${i}\\n`, 'g'))).toHaveLength(1);
    expect(text.startsWith('# Ann\n\n## Memories\n\n')).toBe(true);
    // The last writer of each machine left its mirror as the cluster had it then.
    expect(text.startsWith(local(roots[0]!)) || text.startsWith(local(roots[1]!))).toBe(true);
  });

  it('the mirror: a machine brings the memory it had on its own when the cluster has none, then every write from anywhere reaches its folder', async () => {
    const { roots, files } = await machines(2);
    fs.writeFileSync(agentPaths(roots[0]!, 'ann').memory, '# Ann\n\n## Memories\n\n## 2026-12-01 — Kept from before\n');
    const heard: string[] = [];
    const stop = await startMemoryMirror(roots[0]!, files, ['ann'], (a) => heard.push(a));
    const stop2 = await startMemoryMirror(roots[1]!, files, ['ann'], () => undefined); // the cluster has it now: not replaced
    try {
      expect(await stored(files)).toContain('Kept from before');
      await remember(roots[1]!, 'ann', 'Written on h2');
      const deadline = Date.now() + 10_000;
      // onMirrored is told after the file's write (and its lock's release): waited for too.
      while (!(local(roots[0]!).includes('Written on h2') && heard.includes('ann')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(local(roots[0]!)).toBe(await stored(files));
      expect(local(roots[0]!)).toContain('Kept from before');
      expect(heard).toContain('ann');
    } finally {
      stop();
      stop2();
    }
  });

  it('a watch that stalls without ending (an ordered consumer after the cluster lost a machine) misses nothing for long: the look at the keys in rotation mirrors the write', async () => {
    const { roots, files } = await machines(1);
    // The bucket as it is, behind a watch that never delivers and never ends.
    const stalled = Object.assign(Object.create(Object.getPrototypeOf(files)) as FencedFiles, files, { watch: async () => () => undefined });
    const stop = await startMemoryMirror(roots[0]!, stalled, ['ann'], () => undefined, 200);
    try {
      await files.put(memoryKey('ann'), 0, Buffer.from('# Ann\n\n## Memories\n\n## 2026-12-05 — Missed by the watch\n'));
      const deadline = Date.now() + 5_000;
      while (!local(roots[0]!).includes('Missed by the watch') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(local(roots[0]!)).toBe(await stored(files));
    } finally {
      stop();
    }
  });

  it("the mirror never loses a local memory.md it did not write: an edited or pre-cluster file with entries is backed up before the cluster's replaces it", async () => {
    const { roots, files } = await machines(1);
    await files.put(memoryKey('ann'), 0, Buffer.from('# Ann\n\n## Memories\n\n## 2026-12-01 — From the cluster\n'));
    fs.writeFileSync(agentPaths(roots[0]!, 'ann').memory, '# Ann\n\n## Memories\n\n## 2026-12-01 — Only here\n\nkept by hand\n');
    const stop = await startMemoryMirror(roots[0]!, files, ['ann'], () => undefined);
    try {
      const deadline = Date.now() + 10_000;
      while (!local(roots[0]!).includes('From the cluster') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(local(roots[0]!)).toBe(await stored(files));
      const backups = path.join(roots[0]!, 'backups');
      const kept = fs.readdirSync(backups).filter((d) => d.startsWith('mirror-')).map((d) => fs.readFileSync(path.join(backups, d, 'ann', 'memory.md'), 'utf8'));
      expect(kept).toEqual([expect.stringContaining('Only here')]);
      // What the mirror wrote itself is replaced without a copy.
      await remember(roots[0]!, 'ann', 'Next entry');
      await new Promise((r) => setTimeout(r, 300));
      expect(fs.readdirSync(backups).filter((d) => d.startsWith('mirror-'))).toHaveLength(1);
    } finally {
      stop();
    }
  });

  it('condense swaps in the cluster: an append meanwhile is carried over; a write from another machine right before the swap aborts it and is kept', async () => {
    const { roots, files } = await machines(2);
    await files.put(memoryKey('ann'), 0, Buffer.from(bigMemory('Ann', 70, 9)));
    const options = { settings: { keepRecent: 5, targetBytes: 8_192, backupsKeep: 3 }, summarizer: { kind: 'extractive' as const } };
    const r = await condenseAgentMemory(roots[0]!, 'ann', { ...options, hooks: { afterBackup: async () => void (await remember(roots[1]!, 'ann', 'Appended while condensing')) } });
    expect(r).toMatchObject({ status: 'condensed' });
    const after = (await stored(files))!;
    expect(Buffer.byteLength(after)).toBeLessThan(bigMemory('Ann', 70, 9).length);
    expect(after.match(/Appended while condensing/g)).toHaveLength(1);
    expect(local(roots[0]!)).toBe(after);

    await files.put(memoryKey('ann'), (await files.get(memoryKey('ann')))!.revision, Buffer.from(bigMemory('Ann', 70, 9)));
    const raced = await condenseAgentMemory(roots[0]!, 'ann', {
      ...options,
      hooks: {
        beforeSwap: async () => {
          const now = (await files.get(memoryKey('ann')))!;
          await files.put(memoryKey('ann'), now.revision, Buffer.concat([now.data, Buffer.from('\n### Written on h2 at the last moment\n')]));
        },
      },
    });
    expect(raced).toMatchObject({ status: 'aborted' });
    expect(await stored(files)).toContain('Written on h2 at the last moment');
  });
});

describe("an agent CLI's inbox in cluster mode (the hooks socket, hive mcp)", () => {
  it('reads the unread entries from the cluster, finds a message by id, and acknowledges by a fenced commit there: forward only, never past what was delivered, two machines at once', async () => {
    const { roots } = await machines(2);
    const prefix = JSON.parse(fs.readFileSync(clusterFilePath(roots[0]!), 'utf8')).prefix as string;
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    await t.ensureAgent('ann');
    const sent = [1, 2, 3].map((i) => createMessage({ from: 'god', to: 'ann', act: 'inform', body: `m${i}` }));
    await t.deliver('ann', sent);
    const [a, b] = [externalInbox(roots[0]!), externalInbox(roots[1]!)];
    try {
      expect(fs.existsSync(agentPaths(roots[0]!, 'ann').inbox) ? fs.readdirSync(agentPaths(roots[0]!, 'ann').inbox).filter((f) => f.endsWith('.jsonl')) : []).toEqual([]); // nothing in the folder
      expect((await a.unread('ann', 10)).map((e) => e.message.body)).toEqual(['m1', 'm2', 'm3']);
      expect((await b.find('ann', sent[1]!.id))?.body).toBe('m2');
      expect(await a.acknowledgeThrough('ann', 9)).toEqual({ beyond: 3 });
      // Two machines at once: whichever commits second sees the first's commit (a fenced
      // conflict, looked at again); the cursor ends at the higher seq, never back.
      const [, two] = await Promise.all([a.acknowledgeThrough('ann', 1), b.acknowledgeThrough('ann', 2)]);
      expect(two).toEqual({ cursor: 2, moved: true });
      expect(await t.cursor('ann')).toBe(2);
      expect(await a.acknowledgeThrough('ann', 1)).toEqual({ cursor: 2, moved: false });
      expect((await b.unread('ann', 10)).map((e) => e.message.body)).toEqual(['m3']);
      expect(await a.cursor('ann')).toBe(2);
    } finally {
      a.close();
      b.close();
      t.close();
    }
  });

  it("an agent CLI is not shown a repeated copy of a message (same id twice in its JetStream inbox): unread leaves it out, also when it is the first after the cursor or the last of the inbox, and the cursor moves past it", async () => {
    const { roots } = await machines(1);
    const prefix = JSON.parse(fs.readFileSync(clusterFilePath(roots[0]!), 'utf8')).prefix as string;
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    await t.ensureAgent('ann');
    const [m1, m2] = [1, 2].map((i) => createMessage({ from: 'god', to: 'ann', act: 'inform', body: `m${i}` }));
    await t.deliver('ann', [m1!]);
    // The second copy, as two racing deliverers leave it (nats-server issue 4320).
    const js = (t as unknown as { js: { publish: (subject: string, data: Uint8Array) => Promise<unknown> } }).js;
    await js.publish(`${prefix}.inbox.ann`, new TextEncoder().encode(JSON.stringify(m1)));
    await t.deliver('ann', [m2!]);
    const cli = externalInbox(roots[0]!);
    try {
      expect((await cli.unread('ann', 10)).map((e) => [e.seq, e.message.body])).toEqual([[1, 'm1'], [3, 'm2']]);
      expect(await cli.acknowledgeThrough('ann', 1)).toEqual({ cursor: 1, moved: true });
      expect((await cli.unread('ann', 1)).map((e) => [e.seq, e.message.body])).toEqual([[3, 'm2']]); // the copy at 2 is not a message to show
      expect(await cli.acknowledgeThrough('ann', 3)).toEqual({ cursor: 3, moved: true });
      expect(await cli.unread('ann', 10)).toEqual([]);
      // An inbox that ends with a copy: once the message before it is acknowledged, the
      // next look passes the copy (the cursor moves on; the depth does not show it).
      const m3 = createMessage({ from: 'god', to: 'ann', act: 'inform', body: 'm3' });
      await t.deliver('ann', [m3]);
      await js.publish(`${prefix}.inbox.ann`, new TextEncoder().encode(JSON.stringify(m3)));
      expect((await cli.unread('ann', 10)).map((e) => [e.seq, e.message.body])).toEqual([[4, 'm3']]);
      expect(await cli.acknowledgeThrough('ann', 4)).toEqual({ cursor: 4, moved: true });
      expect(await cli.unread('ann', 10)).toEqual([]);
      expect(await cli.cursor('ann')).toBe(4); // not asked to pass them (an actor-run agent's cursor is its own)
      expect(await cli.unread('ann', 10, { passRepeats: true })).toEqual([]);
      expect(await cli.cursor('ann')).toBe(5);
      expect(await t.depth('ann')).toBe(0);
    } finally {
      cli.close();
      t.close();
    }
  });
});
