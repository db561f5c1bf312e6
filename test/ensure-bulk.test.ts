import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgents, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { readRegistry } from '../src/registry/registry.ts';

// Many agents at once (windows of group commits, src/layout/ensure.ts); a file a power cut
// left empty is written again.

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

  it('an empty memory.md or cursor.json (a power cut before the flush) is written again; a memory with content is kept', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const specs = Array.from({ length: 70 }, (_, i) => ({ id: `b-${i}`, brain: { kind: 'echo' } }));
    await ensureAgents(root, specs);
    fs.writeFileSync(agentPaths(root, 'b-1').memory, '');
    fs.writeFileSync(agentPaths(root, 'b-2').cursor, '');
    fs.writeFileSync(agentPaths(root, 'b-3').memory, '# b-3\n\n## Memories\n\n- likes tea\n');
    await ensureAgents(root, specs);
    expect(fs.readFileSync(agentPaths(root, 'b-1').memory, 'utf8')).toMatch(/^# b-1\n\n## Memories/);
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'b-2').cursor, 'utf8'))).toEqual({ seq: 0 });
    expect(fs.readFileSync(agentPaths(root, 'b-3').memory, 'utf8')).toContain('likes tea');
  });
});
