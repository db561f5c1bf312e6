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

const TOPICS = ['queue', 'router', 'inspector', 'backup', 'pricing', 'deploy', 'postgres', 'latency', 'hiring', 'license'];
const VERBS = ['measured', 'fixed', 'planned', 'reviewed', 'documented', 'rolled back', 'benchmarked', 'discussed'];

/**
 * A memory.md with `entries` dated entries of ~1 KiB each; every `pinEvery`-th is pinned.
 * Deterministic, so tests can compare bytes.
 */
export function bigMemory(name: string, entries: number, pinEvery = 0): string {
  let text = `# ${name}\n\n## Memories\n\n`;
  for (let i = 0; i < entries; i++) {
    const topic = TOPICS[i % TOPICS.length]!;
    const day = `2025-${String(1 + Math.floor(i / 28) % 12).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`;
    const pinned = pinEvery > 0 && i % pinEvery === 0;
    const sentences: string[] = [];
    for (let s = 0; s < 9; s++) {
      const verb = VERBS[(i + s) % VERBS.length]!;
      sentences.push(`We ${verb} the ${topic} work item ${i}.${s} with ${TOPICS[(i * 7 + s) % TOPICS.length]} owners and noted ${100 + ((i * 31 + s * 17) % 900)} follow-up details.`);
    }
    text += `## ${day} — ${topic} note ${i}${pinned ? ' <!-- PINNED -->' : ''}\n\n${sentences.join(' ')}\n\n`;
  }
  return text;
}
