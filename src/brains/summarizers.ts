import { agentPaths } from '../layout/paths.ts';
import { registerSummarizer, entriesMarkdown } from '../memory/summarizer.ts';
import { createCommandBrain } from './command.ts';
import { createOpenAIBrain } from './openai.ts';

/**
 * The reflector condenses a memory with the agent's own model where it has one: the
 * `command` and `openai` providers summarize through `Brain.summarize`. Called once in
 * the reflector's thread (the hive root is needed to find the agent's folder).
 */
export function registerProviderSummarizers(root: string): void {
  const instruction = (targetBytes: number) =>
    `Condense these memory entries into a compact recap of at most ${targetBytes} bytes. Keep names, dates, decisions and facts; drop chatter.\n\n`;
  registerSummarizer('command', (brain, agent) => {
    if (brain.kind !== 'command') return null;
    const b = createCommandBrain(brain, { agentId: agent, agentName: agent, root, agentDir: agentPaths(root, agent).dir, hooksSock: '' });
    return async (req) => b.summarize!(`${instruction(req.targetBytes)}${entriesMarkdown(req.entries)}`);
  });
  registerSummarizer('openai', (brain, agent) => {
    if (brain.kind !== 'openai') return null;
    const b = createOpenAIBrain(brain, { agentDir: agentPaths(root, agent).dir, agentName: agent });
    return async (req) => b.summarize!(`${instruction(req.targetBytes)}${entriesMarkdown(req.entries)}`);
  });
}
