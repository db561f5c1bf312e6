import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.ts';
import { configProblem } from './helpers/config.ts';
import { loadConfig } from '../src/config/load.ts';
import { tempDir } from './helpers/temp.ts';

const ok = { root: './hive', agents: [{ id: 'a', brain: { kind: 'echo' } }] };


describe('hive config validation', () => {
  it('accepts a minimal config, fills defaults and resolves paths against the config folder', () => {
    const c = parseConfig({ root: './hive', agents: [{ id: 'm', brain: { kind: 'module', module: './brains/m.ts' } }] }, '/base');
    expect(c.root).toBe('/base/hive');
    expect(c.agents[0]!.brain).toMatchObject({ module: '/base/brains/m.ts' });
    expect(c.router).toEqual({ pollMs: 2_000, hopCap: 12, batchPerSender: 1_024, sentCap: 1_000 });
    expect(c.supervisor.restart).toEqual({ maxRestarts: 5, withinMs: 60_000, backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 } });
  });

  it('root: required', () => {
    expect(configProblem({ agents: [] })).toContain('Expected `root` to be a string, got nothing');
  });

  it('hooks.deny[i].match: must be a valid regular expression', () => {
    expect(configProblem({ ...ok, hooks: { deny: [{ tool: 'Bash', match: 'rm -rf' }, { tool: 'Bash', match: '(' }] } })).toMatch(/`hooks\.deny\[1\]\.match`.*valid regular expression/);
  });

  it('supervisor.turnTimeoutMs: a positive integer, 10 min by default; agents[i].turnTimeoutMs overrides it', () => {
    expect(parseConfig(ok, '/base').supervisor.turnTimeoutMs).toBe(600_000);
    expect(configProblem({ ...ok, supervisor: { turnTimeoutMs: 0 } })).toMatch(/`supervisor\.turnTimeoutMs` to be a positive number, got 0/);
    expect(configProblem({ ...ok, agents: [{ id: 'a', brain: { kind: 'echo' }, turnTimeoutMs: -5 }] })).toMatch(/`agents\[0\]\.turnTimeoutMs`.*got -5/);
  });

  it('supervisor.workerHeapMb: an integer of at least 16 (MB)', () => {
    expect(parseConfig(ok, '/base').supervisor.workerHeapMb).toBeUndefined();
    expect(configProblem({ ...ok, supervisor: { workerHeapMb: 8 } })).toMatch(/`supervisor\.workerHeapMb` to be a number ≥ 16, got 8/);
  });

  it('agents[i].id: must be a valid agent id', () => {
    expect(configProblem({ ...ok, agents: [ok.agents[0], { id: 'Bad/Id', brain: { kind: 'echo' } }] })).toContain('`agents[1].id`');
  });

  it('agents[i].id: must not be reserved', () => {
    expect(configProblem({ ...ok, agents: [{ id: 'god', brain: { kind: 'echo' } }] })).toMatch(/`agents\[0\]\.id`.*not reserved/);
  });

  it('agents[i].id: must be unique', () => {
    expect(configProblem({ ...ok, agents: [ok.agents[0], ok.agents[0]] })).toMatch(/`agents\[1\]\.id` to be a unique id \(agents\[0\] is also "a"\)/);
  });

  it('agents[i].brain.kind: must be a known provider', () => {
    expect(configProblem({ ...ok, agents: [{ id: 'a', brain: { kind: 'telepathy' } }] })).toContain('`agents[0].brain.kind`');
  });

  it('agents[i].brain.module: required for module brains', () => {
    expect(configProblem({ ...ok, agents: [ok.agents[0], ok.agents[0], { id: 'c', brain: { kind: 'module' } }] })).toContain(
      'Expected `agents[2].brain.module` to be a string, got nothing',
    );
  });

  it('agents[i].brain.command: required for command brains', () => {
    expect(configProblem({ ...ok, agents: [{ id: 'a', brain: { kind: 'command' } }] })).toContain('`agents[0].brain.command`');
  });

  it('agents[i].brain.baseURL: a URL for openai brains', () => {
    expect(configProblem({ ...ok, agents: [{ id: 'a', brain: { kind: 'openai', baseURL: 'not a url', model: 'm' } }] })).toContain(
      'Expected `agents[0].brain.baseURL` to be a URL',
    );
  });

  it('router.pollMs: a positive integer', () => {
    expect(configProblem({ ...ok, router: { pollMs: -5 } })).toContain('Expected `router.pollMs` to be a positive number, got -5 (number)');
  });

  it('router.hopCap: a positive integer', () => {
    expect(configProblem({ ...ok, router: { hopCap: 'many' } })).toContain('Expected `router.hopCap` to be a number, got "many" (string)');
  });

  it('supervisor.restart.maxRestarts and withinMs: positive integers', () => {
    expect(configProblem({ ...ok, supervisor: { restart: { maxRestarts: 0 } } })).toContain('`supervisor.restart.maxRestarts`');
    expect(configProblem({ ...ok, supervisor: { restart: { withinMs: 1.5 } } })).toContain('`supervisor.restart.withinMs`');
  });

  it('supervisor.restart.backoff.jitter: between 0 and 1', () => {
    expect(configProblem({ ...ok, supervisor: { restart: { backoff: { jitter: 2 } } } })).toContain('Expected `supervisor.restart.backoff.jitter` to be at most 1');
  });

  it('unknown keys are rejected by name', () => {
    expect(configProblem({ ...ok, routr: {} })).toContain('no unknown keys (found "routr")');
  });

  it('kickoff[i].act: a speech act', () => {
    expect(configProblem({ ...ok, kickoff: [{ from: 'god', to: 'a', act: 'yell', body: 'x' }] })).toContain('`kickoff[0].act`');
  });

  it('loadConfig reads a TypeScript config file and names it in errors', async () => {
    const dir = tempDir();
    const good = path.join(dir, 'good.config.ts');
    fs.writeFileSync(good, `const n: number = 3;\nexport default { root: './h', router: { hopCap: n } };\n`);
    expect((await loadConfig(good)).router.hopCap).toBe(3);
    const bad = path.join(dir, 'bad.config.ts');
    fs.writeFileSync(bad, `export default { root: 5 };\n`);
    await expect(loadConfig(bad)).rejects.toThrow(/Invalid hive config in .*bad\.config\.ts/);
    await expect(loadConfig(path.join(dir, 'missing.ts'))).rejects.toThrow(/does not exist/);
  });

  it('the bundled hive.config.ts is valid', async () => {
    const c = await loadConfig(path.join(process.cwd(), 'hive.config.ts'));
    expect(c.agents.map((a) => a.id)).toEqual(['planner', 'researcher', 'writer', 'echo']);
  });
});
