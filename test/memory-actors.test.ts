import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, nextEvent, startHive } from './helpers/hive.ts';
import { bigMemory } from './helpers/memory.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { planCondense } from '../src/memory/condense.ts';
import { remember } from '../src/memory/remember.ts';
import type { HiveConfigInput } from '../src/config/schema.ts';

/** Memory settings that let tests see the actors act quickly (schedules far away). */
function memoryConfig(extra: Partial<NonNullable<HiveConfigInput['memory']>> = {}): HiveConfigInput {
  return fastConfig({
    agents: [
      { id: 'ann', name: 'Ann', brain: { kind: 'echo' } },
      { id: 'bob', name: 'Bob', brain: { kind: 'echo' } },
    ],
    memory: { mineEveryMs: 600_000, checkEveryMs: 600_000, growBytes: 512, ...extra },
  });
}

describe('memory actors in a running hive', () => {
  it('the miner mines at start, after a memory grows, and on demand; status shows both actors', async () => {
    const hive = await startHive(memoryConfig());
    await hive.supervisor.memory.started();
    const rows = hive.status();
    expect(rows.find((r) => r.id === 'miner')).toMatchObject({ kind: 'miner', status: 'running' });
    expect(rows.find((r) => r.id === 'reflector')).toMatchObject({ kind: 'reflector', status: 'running' });
    const forced = await hive.mineMemory({ force: true });
    expect(forced.mined).toEqual(expect.arrayContaining(['ann', 'bob']));
    expect(hive.memoryStatus()).toMatchObject({ palaceReady: true, backend: 'index', indexedAgents: expect.arrayContaining(['ann', 'bob']) });

    // a small entry stays below growBytes: no pass; a big one crosses it: a pass soon
    const mined = nextEvent(hive, 'mined', (m) => m.mined.includes('ann'));
    await hive.remember('ann', { title: 'Quarterly kumquat review', body: 'kumquat '.repeat(100) });
    expect((await mined).mined).toEqual(['ann']);
    const r = await hive.searchMemory('kumquat');
    expect(r).toMatchObject({ source: 'index', matches: [expect.objectContaining({ agent: 'ann', heading: expect.stringContaining('Quarterly kumquat review') })] });

    const again = await hive.mineMemory();
    expect(again.mined).toEqual([]);
    const log = fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8');
    expect(log).toContain('"type":"memory.mined"');
  }, 90_000);

  it('the reflector condenses an oversized memory after it grows, and the miner re-mines it', async () => {
    const config = memoryConfig({ condense: { minBytes: 4_096, maxBytes: 16_384, maxEntries: 30, keepRecent: 5, targetBytes: 8_192 } });
    const hive = await startHive(config);
    const file = agentPaths(hive.root, 'bob').memory;
    const original = bigMemory('Bob', 40, 6);
    fs.writeFileSync(file, original);
    const condensed = nextEvent(hive, 'condensed', (c) => c.agent === 'bob');
    const remined = nextEvent(hive, 'mined', (m) => m.mined.includes('bob'));
    const last = await hive.remember('bob', 'one more thing');
    expect(await condensed).toMatchObject({ agent: 'bob', status: 'condensed', summarizer: 'extractive' });
    const after = fs.readFileSync(file, 'utf8');
    expect(after.endsWith(last.text)).toBe(true);
    for (const b of planCondense(original, 5).pinned) expect(after).toContain(b.raw.trimEnd());
    await remined;
    expect(fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8')).toContain('"type":"memory.condensed"');

    // on demand, even below the thresholds; forced condenses go through the actor's queue
    fs.writeFileSync(agentPaths(hive.root, 'ann').memory, bigMemory('Ann', 12));
    expect(await hive.condenseMemory('ann')).toMatchObject({ agent: 'ann', status: 'condensed' });
  }, 90_000);

  it('a crashed miner worker is restarted and keeps working', async () => {
    const hive = await startHive(memoryConfig());
    await hive.mineMemory();
    const before = hive.status().find((r) => r.id === 'miner')!.threadId;
    const restarted = nextEvent(hive, 'restarted', (e) => e.host === 'miner');
    await hive.supervisor.memory.workerOf('miner')?.terminate();
    await restarted;
    const row = hive.status().find((r) => r.id === 'miner')!;
    expect(row.threadId).not.toBe(before);
    expect(row.restarts).toBe(1);
    await remember(hive.root, 'bob', 'Written while the miner restarted: wombat');
    expect((await hive.mineMemory({ force: true })).mined).toContain('bob');
    expect((await hive.searchMemory('wombat')).matches[0]).toMatchObject({ agent: 'bob' });
  }, 90_000);

  it('memory.enabled: false starts no memory actors; mining still works on demand', async () => {
    const hive = await startHive(memoryConfig({ enabled: false }));
    expect(hive.status().map((r) => r.id)).not.toContain('miner');
    const r = await hive.mineMemory();
    expect(r.mined).toEqual(expect.arrayContaining(['ann', 'bob']));
  }, 90_000);
});

describe('SIGKILL of a hive while its reflector condenses (summarizer command on the pool)', () => {
  it('leaves memory.md whole with every append; the next hive condenses it', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    const socketPath = path.join(dir, 's.sock');
    // The summarizer connects here once the condense is under way (backup taken, no lock held).
    const server = net.createServer();
    const connected = new Promise<net.Socket>((resolve) => server.on('connection', (s) => s.once('data', () => resolve(s))));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    fs.mkdirSync(path.join(root, 'agents', 'ann'), { recursive: true });
    const original = bigMemory('Ann', 40, 5);
    fs.writeFileSync(path.join(root, 'agents', 'ann', 'memory.md'), original);
    const child = startFixture('memory-hive.ts', [root, socketPath]);
    const out = collectLines(child);
    const summarizer = await connected;
    const a = await remember(root, 'ann', 'appended during the condense');
    child.kill('SIGKILL');
    const exit = await out.exited;
    expect(exit.signal).toBe('SIGKILL');
    summarizer.destroy();
    server.close();
    const file = agentPaths(root, 'ann').memory;
    expect(fs.readFileSync(file, 'utf8')).toBe(`${original}${a.text}`);
    expect(fs.readdirSync(path.join(root, 'backups'))).toHaveLength(1);

    const hive = await startHive({ ...memoryConfig({ condense: { minBytes: 4_096, maxBytes: 16_384, maxEntries: 30, keepRecent: 5, targetBytes: 8_192 } }), root });
    const done = await hive.condenseMemory('ann', { force: false });
    expect(done).toMatchObject({ status: expect.stringMatching(/condensed|skipped/) });
    const after = fs.readFileSync(file, 'utf8');
    expect(after.length).toBeLessThan(original.length);
    expect(after.endsWith(a.text)).toBe(true);
    expect(fs.readdirSync(agentPaths(root, 'ann').dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  }, 60_000);
});
