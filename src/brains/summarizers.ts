import { agentPaths } from '../layout/paths.ts';
import { readRegistry } from '../registry/registry.ts';
import type { BrainSpec } from '../config/schema.ts';
import { registerSummarizer, entriesMarkdown, type SummaryRequest } from '../memory/summarizer.ts';
import { createCommandBrain } from './command.ts';
import { createOpenAIBrain } from './openai.ts';

/**
 * Memory condensing uses the agent's own model where it has one: the `command` and
 * `openai` providers summarize through `Brain.summarize`. Registered once per thread by
 * whoever condenses (the reflector, `hive memory condense`, the supervisor's fallback).
 */
let registered = false;
export function ensureProviderSummarizers(): void {
  if (registered) return;
  registered = true;
  const instruction = (targetBytes: number) =>
    `Condense these memory entries into a compact recap of at most ${targetBytes} bytes. Keep names, dates, decisions and facts; drop chatter.\n\n`;
  for (const kind of ['command', 'openai'] as const) {
    registerSummarizer(kind, (brain, agent, root) => {
      const summarize = agentProviderSummarizer(root, agent, brain);
      if (!summarize) return null;
      // `label`: what the condense result names as its summarizer (the agent's provider kind).
      return Object.assign(async (req: SummaryRequest) => summarize(`${instruction(req.targetBytes)}${entriesMarkdown(req.entries)}`), { label: kind });
    });
  }
}

/**
 * The agent's own provider as a plain text summarizer (snapshots), from its registry entry,
 * when it is a `command` or `openai` brain; undefined otherwise. Works with no hive running.
 */
export function agentProviderSummarizer(root: string, agentId: string, brain?: BrainSpec): ((text: string) => Promise<string>) | undefined {
  let entry: { brain?: unknown; name?: string } | undefined;
  try {
    entry = readRegistry(root).agents[agentId];
  } catch {
    entry = undefined;
  }
  const spec = brain ?? (entry?.brain as BrainSpec | undefined);
  const name = entry?.name ?? agentId;
  if (spec?.kind === 'command') {
    const b = createCommandBrain(spec, { agentId, agentName: name, root, agentDir: agentPaths(root, agentId).dir, hooksSock: '' });
    return b.summarize!.bind(b);
  }
  if (spec?.kind === 'openai') {
    const b = createOpenAIBrain(spec, { agentDir: agentPaths(root, agentId).dir, agentName: name });
    return b.summarize!.bind(b);
  }
  return undefined;
}
