import { pathToFileURL } from 'node:url';
import { HiveError } from '../errors.ts';
import type { Act } from '../protocol/message.ts';
import type { AgentIdentity, Brain, BrainInput, BrainOutput, BrainTurn, Draft, JsonValue, TimerRequest } from './types.ts';
import { memoryAccess, type MemoryAccess } from '../memory/tool.ts';

/** The helpers a module brain's handler gets beside its input. */
export interface ModuleContext {
  agent: AgentIdentity;
  /** Mutable state object; what it holds at the end of the turn is persisted. */
  state: Record<string, JsonValue>;
  now: number;
  root: string;
  agentDir: string;
  options: Record<string, unknown>;
  /** Answer the input message (inform, in_reply_to set, same conversation). */
  reply(body: string, extra?: Partial<Draft>): void;
  send(to: string, act: Act, body: string, extra?: Partial<Draft>): void;
  /** Ask the people in the loop; the answer arrives as a message from god. */
  ask(body: string, extra?: Partial<Draft>): void;
  schedule(name: string, delayMs: number, payload?: JsonValue): void;
  cancel(name: string): void;
  /** get_memory: search the hive's memories (read-only; works inside the agent's worker). */
  memory: MemoryAccess;
}

export type ModuleHandler = (
  input: BrainInput,
  ctx: ModuleContext,
) => void | Draft[] | Partial<BrainOutput> | Promise<void | Draft[] | Partial<BrainOutput>>;

/**
 * Typed helper for module brains.
 * @example
 * export default defineBrain((input, ctx) => {
 *   if (input.kind === 'message' && input.message.act === 'request') ctx.reply(`done: ${input.message.body}`);
 * });
 */
export function defineBrain(handler: ModuleHandler): ModuleHandler {
  return handler;
}

/** Runs a handler for one turn and gathers what it sent, scheduled and returned. */
export async function runModuleHandler(
  handler: ModuleHandler,
  turn: BrainTurn,
  options: Record<string, unknown> = {},
): Promise<BrainOutput> {
  const messages: Draft[] = [];
  const schedule: TimerRequest[] = [];
  const cancel: string[] = [];
  const state = structuredClone((turn.state ?? {}) as Record<string, JsonValue>);
  const input = turn.input;
  const ctx: ModuleContext = {
    agent: turn.agent,
    state,
    now: turn.now,
    root: turn.root,
    agentDir: turn.agentDir,
    options,
    reply(body, extra = {}) {
      if (input.kind !== 'message') throw new HiveError('E_BRAIN', 'ctx.reply() needs a message input; this turn is a timer');
      messages.push({ to: input.message.from, act: 'inform', in_reply_to: input.message.id, body, ...extra });
    },
    send(to, act, body, extra = {}) {
      messages.push({ to, act, body, ...extra });
    },
    ask(body, extra = {}) {
      messages.push({ to: 'god', act: 'query', needs_human: true, body, ...extra });
    },
    schedule(name, delayMs, payload = null) {
      schedule.push({ name, delayMs, payload });
    },
    cancel(name) {
      cancel.push(name);
    },
    memory: memoryAccess(turn.root),
  };
  const returned = await handler(input, ctx);
  let out: Partial<BrainOutput> = {};
  if (Array.isArray(returned)) out = { messages: returned };
  else if (returned && typeof returned === 'object') out = returned;
  return {
    messages: [...messages, ...(out.messages ?? [])],
    state: out.state ?? state,
    schedule: [...schedule, ...(out.schedule ?? [])],
    cancel: [...cancel, ...(out.cancel ?? [])],
    ...(out.reply !== undefined ? { reply: out.reply } : {}),
  };
}

/**
 * A brain backed by a JS/TS module exporting a handler (default export unless `exportName`).
 * `url` points at an importable file (TypeScript is compiled by the host beforehand).
 */
export async function createModuleBrain(url: string, exportName = 'default', options: Record<string, unknown> = {}): Promise<Brain> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url.startsWith('file:') ? url : pathToFileURL(url).href)) as Record<string, unknown>;
  } catch (err) {
    throw new HiveError('E_BRAIN', `Cannot load brain module ${url}: ${(err as Error).message}`, { cause: err });
  }
  const handler = mod[exportName] as ModuleHandler | { handle?: ModuleHandler } | undefined;
  const fn = typeof handler === 'function' ? handler : typeof handler?.handle === 'function' ? handler.handle.bind(handler) : null;
  if (!fn) {
    throw new HiveError('E_BRAIN', `Brain module ${url} has no function export "${exportName}" (got ${typeof handler})`);
  }
  return {
    kind: 'module',
    handle: (turn) => runModuleHandler(fn, turn, options),
  };
}
