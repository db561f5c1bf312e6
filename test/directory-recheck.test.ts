import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { readDirectory } from '../src/router/directory.ts';
import { tempRoot } from './helpers/temp.ts';

describe('router directory: re-reads check a share of the folders', () => {
  it('a sound folder keeps its last check unless asked to look again; a refused one is looked at every time', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const registry = JSON.parse(fs.readFileSync(hivePaths(root).registry, 'utf8'));
    const now = new Date().toISOString();
    for (let i = 0; i < 20; i++) {
      const id = `a-${i}`;
      registry.agents[id] = { id, name: id, role: 'agent', brain: { kind: 'echo' }, status: 'active', origin: 'config', created_at: now, updated_at: now };
      fs.mkdirSync(agentPaths(root, id).outbox, { recursive: true });
      if (i !== 7) fs.mkdirSync(agentPaths(root, id).inbox, { recursive: true });
    }
    fs.writeFileSync(hivePaths(root).registry, JSON.stringify(registry));

    const first = readDirectory(root);
    expect(first.all.has('a-5')).toBe(true);
    expect(first.all.has('a-7')).toBe(false); // no inbox yet

    // a-5's inbox becomes a file; a-7 gets its inbox.
    const inbox5 = agentPaths(root, 'a-5').inbox;
    fs.rmSync(inbox5, { recursive: true });
    fs.writeFileSync(inbox5, 'not a folder');
    fs.mkdirSync(agentPaths(root, 'a-7').inbox);

    const lazy = readDirectory(root, first, () => false);
    expect(lazy.all.has('a-5')).toBe(true); // not looked at again yet
    expect(lazy.all.has('a-7')).toBe(true); // refused before: looked at every time

    const looked = readDirectory(root, lazy, (id) => id === 'a-5');
    expect(looked.all.has('a-5')).toBe(false);
    expect(looked.refused.get('a-5')).toMatch(/inbox is a regular file|not a folder/);
  });
});
