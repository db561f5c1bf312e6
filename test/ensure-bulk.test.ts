import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, tempRoot } from './helpers/temp.ts';
import { DiskRecorder } from './helpers/power-loss/recorder.ts';
import { crashState, seededRandom, type Policy } from './helpers/power-loss/crash-states.ts';
import { ensureAgents, ensureAgentsReporting, ensureHive } from '../src/layout/ensure.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { remember } from '../src/memory/remember.ts';
import { sweepOrphans } from '../src/supervisor/startup.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { readRegistry } from '../src/registry/registry.ts';

// Many agents at once (src/layout/ensure.ts); a file a power cut left missing, empty or cut
// short is written again by the next ensure, which every start runs first.

describe('ensuring many agents at once', () => {
  it('200 new agents get their folders and files, no temp file left, all in the registry', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const ids = Array.from({ length: 200 }, (_, i) => `a-${i}`);
    await ensureAgents(root, ids.map((id) => ({ id, brain: { kind: 'echo' } })));
    for (const id of ids) {
      const p = agentPaths(root, id);
      for (const dir of [p.outbox, p.inbox, p.sessions]) expect(fs.statSync(dir).isDirectory()).toBe(true);
      expect(fs.readFileSync(p.identity, 'utf8')).toContain(`- id: ${id}`);
      expect(fs.readFileSync(p.memory, 'utf8')).toMatch(/^# a-\d+/);
      expect(JSON.parse(fs.readFileSync(p.cursor, 'utf8'))).toEqual({ seq: 0 });
      expect(fs.readdirSync(p.dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    }
    expect(Object.keys(readRegistry(root).agents)).toEqual(expect.arrayContaining(ids));
  });

  it('an empty or cut-short memory.md or cursor.json (a power cut before it reached the disk) is written again; a memory with content is kept', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const specs = Array.from({ length: 70 }, (_, i) => ({ id: `b-${i}`, brain: { kind: 'echo' } }));
    await ensureAgents(root, specs);
    fs.writeFileSync(agentPaths(root, 'b-1').memory, '');
    fs.writeFileSync(agentPaths(root, 'b-2').cursor, '');
    fs.writeFileSync(agentPaths(root, 'b-3').memory, '# b-3\n\n## Memories\n\n- likes tea\n');
    fs.writeFileSync(agentPaths(root, 'b-4').memory, '# b-4\n\n## Mem');
    fs.writeFileSync(agentPaths(root, 'b-5').cursor, '{\n  "se');
    fs.writeFileSync(agentPaths(root, 'b-6').cursor, '{\n  "seq": 7\n}\n');
    await ensureAgents(root, specs);
    expect(fs.readFileSync(agentPaths(root, 'b-4').memory, 'utf8')).toBe('# b-4\n\n## Memories\n\n');
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'b-5').cursor, 'utf8'))).toEqual({ seq: 0 });
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'b-6').cursor, 'utf8'))).toEqual({ seq: 7 });
    expect(fs.readFileSync(agentPaths(root, 'b-1').memory, 'utf8')).toMatch(/^# b-1\n\n## Memories/);
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'b-2').cursor, 'utf8'))).toEqual({ seq: 0 });
    expect(fs.readFileSync(agentPaths(root, 'b-3').memory, 'utf8')).toContain('likes tea');
  });

  it('a memory.md of the template\'s length read back as zero bytes (its size reached the disk, its data did not) is written again', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgents(root, [{ id: 'z' }]);
    const p = agentPaths(root, 'z');
    const size = fs.statSync(p.memory).size;
    fs.writeFileSync(p.memory, Buffer.alloc(size));
    fs.writeFileSync(p.cursor, Buffer.concat([Buffer.from('{\n  "s'), Buffer.alloc(5)]));
    await ensureAgents(root, [{ id: 'z' }]);
    expect(fs.readFileSync(p.memory, 'utf8')).toBe('# z\n\n## Memories\n\n');
    expect(JSON.parse(fs.readFileSync(p.cursor, 'utf8'))).toEqual({ seq: 0 });
  });

  it("the start's ensure (files not flushed): a power cut anywhere, then in what is acknowledged in the new folders, loses nothing acknowledged, and the next ensure repairs every file", async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgents(root, [{ id: 'kept', brain: { kind: 'echo' } }]);
    fs.writeFileSync(agentPaths(root, 'kept').memory, '# kept\n\n## Memories\n\n- likes tea\n');
    const specs = [
      { id: 'kept', name: 'Kept', brain: { kind: 'echo' } },
      { id: 'new-1', brain: { kind: 'echo' } },
      { id: 'new-2', role: 'planner', brain: { kind: 'echo' } },
    ];
    const recorder = new DiskRecorder(root);
    const baseline = recorder.start();
    const delivered = createMessage({ from: 'kept', to: 'new-1', act: 'inform', body: 'delivered before its first commit' });
    let ensureEnd = 0;
    try {
      await ensureAgentsReporting(root, specs, 'config', { flushFiles: false });
      ensureEnd = recorder.ops.length;
      // What is made in the new folders next is acknowledged once flushed: a delivery into
      // an inbox that has no segment yet, and a memory appended to the template.
      const transport = createFsTransport(root);
      await transport.deliver('new-1', [delivered]);
      transport.close();
      recorder.ack([delivered.id]);
      await remember(root, 'new-2', 'Deploys go out on Tuesdays');
      recorder.ack(['memory:new-2']);
    } finally {
      recorder.stop();
    }
    const ops = recorder.ops;
    const ensureOps = ops.slice(0, ensureEnd);
    // Of the ensure, only registry.json's content is flushed (and the folders).
    expect(ensureOps.filter((o) => o.op === 'sync')).toHaveLength(1);
    expect(ensureOps.filter((o) => o.op === 'dirsync').length).toBeGreaterThanOrEqual(specs.length);
    const files = (dir: string) =>
      Object.fromEntries(
        specs.flatMap((s) => {
          const p = agentPaths(dir, s.id);
          return [
            [`${s.id}/identity.md`, fs.readFileSync(p.identity, 'utf8')],
            [`${s.id}/memory.md`, fs.readFileSync(p.memory, 'utf8')],
            [`${s.id}/cursor.json`, fs.readFileSync(p.cursor, 'utf8')],
          ];
        }),
      );
    const want = files(root);
    expect(want['kept/memory.md']).toContain('likes tea');
    const rnd = seededRandom(20_261_207);
    const work = tempDir('hive-ensure-power-');
    const failures: string[] = [];
    let checked = 0;
    for (let k = 0; k <= ops.length; k++) {
      for (const policy of ['keep', 'drop', 'random', 'random'] as Policy[]) {
        const dir = path.join(work, `s${checked++}`, 'hive');
        const state = crashState(baseline, ops, k, policy, rnd);
        state.materialize(dir);
        const at = `cut after op ${k} (${policy})`;
        try {
          // The start's first steps: ensure, then the sweep (which brings each inbox's
          // .synced up to its last whole entry).
          const { created } = await ensureAgentsReporting(dir, specs, 'config', { flushFiles: false });
          sweepOrphans(dir, created);
          // Acknowledged before the cut: still there.
          if (state.acked.has(delivered.id) && !listInbox(dir, 'new-1').some((e) => e.id === delivered.id)) failures.push(`${at}: the delivered message is gone`);
          if (state.acked.has('memory:new-2') && !fs.readFileSync(agentPaths(dir, 'new-2').memory, 'utf8').includes('Deploys go out on Tuesdays')) failures.push(`${at}: the remembered entry is gone`);
          const got = files(dir);
          for (const [file, text] of Object.entries(want)) {
            const ok = file === 'new-2/memory.md' && !state.acked.has('memory:new-2') ? got[file]!.startsWith('# new-2\n\n## Memories\n\n') : got[file] === text;
            if (!ok) failures.push(`${at}: ${file} is ${JSON.stringify(got[file])}`);
          }
          const registered = Object.keys(readRegistry(dir).agents);
          for (const s of specs) if (!registered.includes(s.id)) failures.push(`${at}: ${s.id} is not in the registry`);
        } catch (err) {
          failures.push(`${at}: ${(err as Error).message}`);
        }
        fs.rmSync(path.dirname(dir), { recursive: true, force: true });
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(checked).toBeGreaterThan(ops.length);
  }, 180_000);

  it('ensureAgents outside the start (a spawned agent, god, hive) flushes the files: a power cut once it returned leaves them whole without a repair', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const recorder = new DiskRecorder(root);
    const baseline = recorder.start();
    try {
      await ensureAgents(root, [{ id: 'spawned', role: 'helper' }]);
    } finally {
      recorder.stop();
    }
    const p = agentPaths(root, 'spawned');
    const want = [p.identity, p.memory, p.cursor].map((f) => fs.readFileSync(f, 'utf8'));
    const dir = path.join(tempDir('hive-ensure-flushed-'), 'hive');
    crashState(baseline, recorder.ops, recorder.ops.length, 'drop').materialize(dir);
    const q = agentPaths(dir, 'spawned');
    expect([q.identity, q.memory, q.cursor].map((f) => fs.readFileSync(f, 'utf8'))).toEqual(want);
    expect(readRegistry(dir).agents.spawned?.role).toBe('helper');
  });
});
