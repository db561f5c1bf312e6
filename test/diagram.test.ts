import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { tempDir } from './helpers/temp.ts';
import { createRequire } from 'node:module';
import { MACHINES, eventLabel, machineGraph } from '../src/inspector/machine-graph.ts';
import { renderMachineSvg } from '../src/inspector/diagram.ts';
import { elkThreadStats, layoutOnThread } from '../src/inspector/elk-thread.ts';

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

  it('ELK lays out on a thread of its own (nice 19 on Linux), the same layout as elkjs in this thread', async () => {
    const before = { ...elkThreadStats };
    const svg = await renderMachineSvg(machineGraph(MACHINES.agent));
    expect(svg).toContain('data-state="thinking"');
    expect(elkThreadStats.layouts).toBe(before.layouts + 1);
    expect(elkThreadStats.inThisThread).toBe(before.inThisThread);
    if (process.platform === 'linux') expect(elkThreadStats.nice).toBe(19);
    expect(os.getPriority()).toBe(0); // only that thread: this one keeps its priority

    const graph = {
      id: 'root',
      layoutOptions: { 'elk.algorithm': 'layered', 'elk.direction': 'DOWN' },
      children: ['a', 'b', 'c', 'd'].map((id) => ({ id, width: 60, height: 30 })),
      edges: [['a', 'b'], ['a', 'c'], ['c', 'd'], ['d', 'a']].map(([s, t], i) => ({ id: `e${i}`, sources: [s!], targets: [t!] })),
    };
    const ELK = createRequire(import.meta.url)('elkjs/lib/elk.bundled.js') as new () => { layout<T>(g: T): Promise<T> };
    const here = await new ELK().layout(structuredClone(graph));
    // ELK numbers its objects ("$H") as it goes: the same layout, other numbers.
    const geometry = (g: unknown) => JSON.parse(JSON.stringify(g, (k, v) => (k === '$H' ? undefined : v)));
    expect(geometry(await layoutOnThread(structuredClone(graph)))).toEqual(geometry(here));
  });
});
