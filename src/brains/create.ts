import { HiveError } from '../errors.ts';
import type { BrainSpec } from '../config/schema.ts';
import type { Brain } from './types.ts';
import { createEchoBrain } from './echo.ts';
import { createModuleBrain } from './module.ts';
import type { ToolDescription } from './prompt.ts';

/** What a brain factory may need besides its spec. */
export interface BrainEnv {
  root: string;
  agentId: string;
  agentName: string;
  agentDir: string;
  /** Importable URL of a module brain, compiled by the supervisor. */
  moduleUrl?: string;
  /** The hooks socket path given to external CLIs as HIVE_SOCK. */
  hooksSock?: string;
  /** Extra environment for spawned providers (OTEL_* when telemetry is on). */
  extraEnv?: Record<string, string>;
  /** Tools described to prompt-driven brains (get_memory once memory exists). */
  tools?: ToolDescription[];
  /** Runs a tool call a model made (function-calling providers). */
  runTool?: (name: string, args: unknown) => Promise<unknown>;
}

type Factory<K extends BrainSpec['kind']> = (spec: Extract<BrainSpec, { kind: K }>, env: BrainEnv) => Promise<Brain>;

/** One entry per provider kind. Adding a provider is one file plus one line here. */
const FACTORIES: { [K in BrainSpec['kind']]?: Factory<K> } = {
  echo: async (spec) => createEchoBrain(spec.delayMs === undefined ? {} : { delayMs: spec.delayMs }),
  module: async (spec, env) => createModuleBrain(env.moduleUrl ?? spec.module, spec.export ?? 'default', spec.options ?? {}),
  // Providers load on first use: execa alone is more code than an echo agent's worker
  // needs, parsed at every start otherwise.
  command: async (spec, env) =>
    (await import('./command.ts')).createCommandBrain(spec, {
      agentId: env.agentId,
      agentName: env.agentName,
      root: env.root,
      agentDir: env.agentDir,
      hooksSock: env.hooksSock ?? '',
      ...(env.extraEnv ? { extraEnv: env.extraEnv } : {}),
      ...(env.tools ? { tools: env.tools } : {}),
      installCli: true,
    }),
  machine: async (spec, env) => {
    const provider = spec.provider ? await createBrain(spec.provider, env) : undefined;
    return (await import('./machine.ts')).createMachineBrain(
      { module: spec.module, url: env.moduleUrl ?? spec.module, ...(spec.export ? { exportName: spec.export } : {}), ...(spec.options ? { options: spec.options } : {}), ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}) },
      { root: env.root, agentId: env.agentId, agentDir: env.agentDir, ...(provider ? { provider } : {}), runMemory: (args) => env.runTool?.('get_memory', args) ?? Promise.reject(new Error('get_memory is not available here')) },
    );
  },
  openai: async (spec, env) =>
    (await import('./openai.ts')).createOpenAIBrain(spec, {
      agentDir: env.agentDir,
      agentName: env.agentName,
      ...(env.tools ? { tools: env.tools } : {}),
      ...(env.runTool ? { runTool: env.runTool } : {}),
    }),
};

/** Kinds whose messages wait for people or an outside process instead of an actor. */
export const PASSIVE_KINDS: ReadonlySet<string> = new Set(['human', 'external']);

export async function createBrain(spec: BrainSpec, env: BrainEnv): Promise<Brain> {
  const factory = FACTORIES[spec.kind] as Factory<typeof spec.kind> | undefined;
  if (!factory) throw new HiveError('E_BRAIN', `No brain provider for kind "${spec.kind}" (agent ${env.agentId})`);
  return factory(spec as never, env);
}
