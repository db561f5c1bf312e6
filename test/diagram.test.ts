import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { tempDir } from './helpers/temp.ts';
import { MACHINES, eventLabel, machineGraph } from '../src/inspector/machine-graph.ts';

describe('machine diagrams', () => {
  it('the graph of the agent machine has every state, the eventless transitions and readable labels', () => {
    const g = machineGraph(MACHINES.agent);
    expect(g.states.map((s) => s.key).sort()).toEqual(['committing', 'fetching', 'idle', 'rejecting', 'stopped', 'thinking']);
    expect(g.states.find((s) => s.key === 'idle')!.initial).toBe(true);
    expect(g.states.find((s) => s.key === 'thinking')!.invoke).toBe('think');
    expect(g.transitions).toContainEqual(expect.objectContaining({ source: 'idle', target: 'fetching', label: 'wake / always [wakePending]' }));
    expect(g.transitions).toContainEqual(expect.objectContaining({ source: 'thinking', target: 'committing', label: 'done' }));
    const child = machineGraph(MACHINES['supervised-child']);
    expect(child.transitions).toContainEqual(expect.objectContaining({ source: '*', target: 'stopping' }));
    expect(child.transitions).toContainEqual(expect.objectContaining({ source: 'backingOff', target: 'restarting', label: 'after backoff' }));
    expect(eventLabel('xstate.error.actor.0.x.y')).toBe('error');
  });

  it('hive diagram MACHINE --out FILE.svg writes an SVG with a node per state; an unknown machine is a usage error', async () => {
    const dir = tempDir();
    for (const name of Object.keys(MACHINES)) {
      const out = memoryIO('', {}, dir);
      expect(await runCli(['diagram', name, '--out', `${name}.svg`], out.io)).toBe(0);
      const svg = fs.readFileSync(path.join(dir, `${name}.svg`), 'utf8');
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      for (const s of machineGraph(MACHINES[name as keyof typeof MACHINES]).states) expect(svg).toContain(`data-state="${s.key}"`);
      expect(svg.match(/<path class="edge"/g)!.length).toBeGreaterThan(3);
    }
    const bad = memoryIO('', {}, dir);
    expect(await runCli(['diagram', 'nope', '--out', 'x.svg'], bad.io)).toBe(2);
    expect(bad.stderr).toContain(`unknown machine "nope"; expected one of ${Object.keys(MACHINES).join(', ')}`);
    const missing = memoryIO('', {}, dir);
    expect(await runCli(['diagram', 'agent'], missing.io)).toBe(2);
  });
});
