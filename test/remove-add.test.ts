import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import type { AgentHosts } from '../src/supervisor/agent-hosts.ts';

// A cluster machine that loses an agent's lease and takes it again a moment later removes
// the agent and adds it back while its actor may still be finishing a turn. Two actors of
// one agent must never run at once: the add waits for the removal.
describe('an agent added while its removal is under way', () => {
  it('starts only once the previous actor has stopped (its turn finished), never beside it', async () => {
    const gated = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'gated.ts') };
    const hive = await startHive(
      fastConfig({
        agents: [{ id: 'client', brain: { kind: 'external' } }, { id: 'g', brain: gated }],
        supervisor: { stopGraceMs: 20_000 }, // the removal waits for the turn at the gate
      }),
    );
    const starts = () => fs.readFileSync(hivePaths(hive.root).log, 'utf8').split('\n').filter((l) => l.includes('"type":"actor.started","agent":"g"')).length;
    await hive.send({ from: 'client', to: 'g', act: 'request', body: 'held at the gate' });
    await waitFor(hive, () => hive.status().find((s) => s.id === 'g')?.state === 'thinking', 'g is in its turn');
    const agents = (hive.supervisor as unknown as { agents: AgentHosts }).agents;
    const r = agents.get('g')!;
    const before = starts();
    const removal = agents.remove('g');
    const adding = agents.add({ ...r.entry, status: 'active' }, r.brain, undefined);
    await new Promise((res) => setTimeout(res, 2_000)); // long enough for a second worker to boot and start g
    expect(starts()).toBe(before); // the first actor is still in its turn: no second one
    fs.writeFileSync(path.join(agentPaths(hive.root, 'g').dir, 'gate'), '');
    await Promise.all([removal, adding]);
    expect(starts()).toBe(before + 1); // started again once the first had stopped
  }, 60_000);
});
