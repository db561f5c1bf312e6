import { execa } from 'execa';
import { HiveError, errorMessage } from '../errors.ts';
import type { BrainSpec } from '../config/schema.ts';
import { extractiveSummary, type SummaryEntry } from './extractive.ts';

export type { SummaryEntry };

/**
 * Summarizers turn the old entries of a memory into the text of its `## Condensed`
 * region. One interface, three sources:
 *
 *   - `memory.summarizer` in the config: a command run with execa; it reads the entries
 *     as markdown on stdin and prints the summary (an LLM CLI, a script);
 *   - a provider registered for the agent's brain kind (`registerSummarizer`): how LLM
 *     brains (`command`, `openai`) summarize with the agent's own model;
 *   - the built-in extractive condenser otherwise.
 *
 * A summarizer is a plain async function, so anything can be one.
 */

export interface SummaryRequest {
  agent: string;
  entries: SummaryEntry[];
  /** The size the summary should stay under, in bytes (a hint for LLMs, a budget for the extractive one). */
  targetBytes: number;
}

export type Summarizer = (request: SummaryRequest) => Promise<string>;

/** A summarizer as plain data, so it can run on a pool thread. */
export type SummarizerSpec =
  | { kind: 'extractive' }
  | { kind: 'command'; command: string; args: string[]; timeoutMs: number; cwd?: string };

/** The entries as the markdown a summarizer command reads on stdin. */
export function entriesMarkdown(entries: SummaryEntry[]): string {
  return entries.map((e) => `## ${e.heading}\n\n${e.body.trim()}\n`).join('\n');
}

/** The built-in extractive condenser (see `extractive.ts`). */
export function extractiveSummarizer(): Summarizer {
  return async (req) => extractiveSummary(req.entries, req.targetBytes);
}

/**
 * Runs a command: entries on stdin, summary on stdout. `HIVE_AGENT` and
 * `HIVE_TARGET_BYTES` are in its environment. Fails (E_BRAIN) on a non-zero exit,
 * a timeout or an empty answer.
 * @example commandSummarizer({ kind: 'command', command: 'llm', args: ['-s', 'Summarize'], timeoutMs: 120_000 })
 */
export function commandSummarizer(spec: Extract<SummarizerSpec, { kind: 'command' }>): Summarizer {
  return async (req) => {
    let stdout: string;
    try {
      const r = await execa(spec.command, spec.args, {
        input: entriesMarkdown(req.entries),
        timeout: spec.timeoutMs,
        forceKillAfterDelay: 1_000,
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        env: { HIVE_AGENT: req.agent, HIVE_TARGET_BYTES: String(req.targetBytes) },
      });
      stdout = r.stdout;
    } catch (err) {
      const e = err as { timedOut?: boolean; exitCode?: number };
      const why = e.timedOut ? `did not answer within ${spec.timeoutMs} ms` : e.exitCode !== undefined ? `exited with code ${e.exitCode}` : errorMessage(err);
      throw new HiveError('E_BRAIN', `Summarizer command ${spec.command} ${why}`, { cause: err });
    }
    if (!stdout.trim()) throw new HiveError('E_BRAIN', `Summarizer command ${spec.command} printed nothing`);
    return stdout;
  };
}

export function summarizerFromSpec(spec: SummarizerSpec): Summarizer {
  return spec.kind === 'command' ? commandSummarizer(spec) : extractiveSummarizer();
}

/** Makes the summarizer of an agent whose brain is of a registered kind (null: none for this one). */
export type SummarizerFactory = (brain: BrainSpec, agent: string, root: string) => Summarizer | null;
const providers = new Map<string, SummarizerFactory>();

/**
 * Lets a brain provider summarize with the agent's own model. Register it in the
 * reflector's thread (the provider's module does this when imported).
 * @example registerSummarizer('openai', (brain) => async (req) => callModel(brain, entriesMarkdown(req.entries)))
 */
export function registerSummarizer(kind: BrainSpec['kind'], factory: SummarizerFactory): void {
  providers.set(kind, factory);
}

/** The registered summarizer for an agent's brain, if its provider has one. */
export function providerSummarizer(brain: BrainSpec | undefined, agent: string, root: string): Summarizer | null {
  if (!brain) return null;
  return providers.get(brain.kind)?.(brain, agent, root) ?? null;
}
