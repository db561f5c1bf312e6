import path from 'node:path';
import type { BrainSpec } from '../config/schema.ts';
import { readRegistry } from '../registry/registry.ts';
import type { MemoryConfig } from './config.ts';
import type { MineSettings } from './mine.ts';
import type { ReflectOptions } from './reflect.ts';
import { providerSummarizer, type Summarizer, type SummarizerSpec } from './summarizer.ts';

/** The miner's settings from the `memory` config section. */
export function mineSettingsOf(memory: MemoryConfig, configDir: string): MineSettings {
  return { ignore: memory.ignore, mempalace: memory.mempalace, snapshotBytes: memory.snapshotBytes, configDir };
}

/** The reflector's condense settings from the `memory` config section. */
export function condenseSettingsOf(memory: MemoryConfig): ReflectOptions['settings'] {
  const c = memory.condense;
  return { keepRecent: c.keepRecent, targetBytes: c.targetBytes, backupsKeep: c.backupsKeep };
}

/**
 * Who summarizes an agent's old entries: the configured command, else the agent's own
 * brain provider (when it registered a summarizer), else the built-in extractive one.
 */
export function resolveSummarizer(root: string, agent: string, memory: MemoryConfig, configDir: string): Summarizer | SummarizerSpec {
  const s = memory.summarizer;
  if (s) {
    const command = s.command.includes('/') ? path.resolve(configDir, s.command) : s.command;
    return { kind: 'command', command, args: s.args, timeoutMs: s.timeoutMs, cwd: configDir };
  }
  let brain: unknown;
  try {
    brain = readRegistry(root).agents[agent]?.brain;
  } catch {
    brain = undefined;
  }
  // The registry holds brains the config schema validated; the kind picks the provider.
  const spec = typeof (brain as { kind?: unknown } | undefined)?.kind === 'string' ? (brain as BrainSpec) : undefined;
  return providerSummarizer(spec, agent, root) ?? { kind: 'extractive' };
}
