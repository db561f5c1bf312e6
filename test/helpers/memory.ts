import fs from 'node:fs';
import path from 'node:path';
import { ensureAgent, ensureHive } from '../../src/layout/ensure.ts';
import { agentPaths } from '../../src/layout/paths.ts';
import type { MineSettings } from '../../src/memory/mine.ts';
import { FIXTURES } from './fixture.ts';
import { tempRoot } from './temp.ts';

export const LABELLED = path.join(FIXTURES, 'memory');

export interface LabelledQuery {
  query: string;
  agent: string;
  heading: string;
}

export function labelledQueries(): LabelledQuery[] {
  return JSON.parse(fs.readFileSync(path.join(LABELLED, 'queries.json'), 'utf8')) as LabelledQuery[];
}

/** A hive root holding the labelled memories of `test/fixtures/memory/agents/` (or some of them). */
export async function labelledHive(only?: string[]): Promise<string> {
  const root = tempRoot();
  await ensureHive(root);
  for (const agent of only ?? fs.readdirSync(path.join(LABELLED, 'agents')).sort()) {
    await ensureAgent(root, { id: agent, brain: { kind: 'echo' } });
    fs.copyFileSync(path.join(LABELLED, 'agents', agent, 'memory.md'), agentPaths(root, agent).memory);
  }
  return root;
}

/** Mining settings for tests: no MemPalace unless given, snapshot only when forced. */
export function mineSettings(overrides: Partial<MineSettings> = {}): MineSettings {
  return {
    ignore: [],
    mempalace: { enabled: false, args: [], mineTimeoutMs: 5_000, searchTimeoutMs: 2_000 },
    snapshotBytes: 1 << 30,
    configDir: process.cwd(),
    ...overrides,
  };
}
