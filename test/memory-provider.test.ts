import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { agentPaths } from '../src/layout/paths.ts';

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
