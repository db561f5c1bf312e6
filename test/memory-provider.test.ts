import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { sessionPaths } from '../src/session/paths.ts';
import { currentSession } from '../src/session/session.ts';

describe("the reflector summarizes with the agent's own provider", () => {
  it('a command-brain agent condenses its memory through its own command', async () => {
    const brain = { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'summarize.mjs')] };
    const hive = await startHive(fastConfig({ agents: [{ id: 'llm', brain }] }));
    for (let i = 0; i < 60; i++) await hive.remember('llm', `Note ${i}\nDecision number ${i}: ${'we chose the simpler design because it is easier to operate. '.repeat(6)}`);
    const result = await hive.condenseMemory('llm', { force: true });
    expect(result).toMatchObject({ agent: 'llm' });
    const text = fs.readFileSync(agentPaths(hive.root, 'llm').memory, 'utf8');
    expect(text).toContain("Condensed by the agent's own model");
    expect(text).toContain('## Recent');
  }, 60_000);
});

describe("with no hive running, the agent's own provider still does the work", () => {
  const brain = { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'summarize.mjs')] };

  it('hive memory condense and hive snapshot use the command brain recorded in the registry', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'llm', brain }] }));
    for (let i = 0; i < 60; i++) await hive.remember('llm', `Note ${i}\nDecision number ${i}: ${'we chose the simpler design because it is easier to operate. '.repeat(6)}`);
    fs.appendFileSync(path.join(sessionPaths(hive.root, 'llm', currentSession(hive.root, 'llm').key).conversation), `${JSON.stringify({ at: 'x', role: 'user', text: 'ship friday' })}\n`);
    await hive.close();
    const condense = memoryIO();
    expect(await runCli(['memory', 'condense', 'llm', '--root', hive.root, '--json'], condense.io)).toBe(0);
    expect(JSON.parse(condense.stdout)).toMatchObject({ status: 'condensed', summarizer: 'command' });
    expect(fs.readFileSync(agentPaths(hive.root, 'llm').memory, 'utf8')).toContain("Condensed by the agent's own model");
    const snap = memoryIO();
    expect(await runCli(['snapshot', 'llm', '--name', 'plans', '--root', hive.root, '--json'], snap.io)).toBe(0);
    expect(JSON.parse(snap.stdout).snapshot).toMatchObject({ name: 'plans', method: 'provider' });
  }, 60_000);
});

