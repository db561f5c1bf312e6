import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, tempRoot } from './helpers/temp.ts';
import { DiskRecorder } from './helpers/power-loss/recorder.ts';
import { crashState, seededRandom, type Policy } from './helpers/power-loss/crash-states.ts';
import { ensureAgents, ensureHive } from '../src/layout/ensure.ts';
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

  it('a power cut anywhere in the creation of agents leaves nothing the next ensure does not repair', async () => {
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
    try {
      await ensureAgents(root, specs);
    } finally {
      recorder.stop();
    }
    const ops = recorder.ops;
    // The files are written without a flush: the registry is the one thing flushed.
    expect(ops.filter((o) => o.op === 'sync')).toHaveLength(1);
    const expected = (dir: string) =>
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
    const want = expected(root);
    expect(want['kept/memory.md']).toContain('likes tea');
    const rnd = seededRandom(20_261_207);
    const work = tempDir('hive-ensure-power-');
    const failures: string[] = [];
    let checked = 0;
    for (let k = 0; k <= ops.length; k++) {
      for (const policy of ['keep', 'drop', 'random', 'random'] as Policy[]) {
        const dir = path.join(work, `s${checked++}`, 'hive');
        crashState(baseline, ops, k, policy, rnd).materialize(dir);
        try {
          await ensureAgents(dir, specs);
          const got = expected(dir);
          for (const [file, text] of Object.entries(want)) if (got[file] !== text) failures.push(`cut after op ${k} (${policy}): ${file} is ${JSON.stringify(got[file])}`);
          const registered = Object.keys(readRegistry(dir).agents);
          for (const s of specs) if (!registered.includes(s.id)) failures.push(`cut after op ${k} (${policy}): ${s.id} is not in the registry`);
        } catch (err) {
          failures.push(`cut after op ${k} (${policy}): ${(err as Error).message}`);
        }
        fs.rmSync(path.dirname(dir), { recursive: true, force: true });
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(checked).toBeGreaterThan(ops.length);
  }, 120_000);
});
