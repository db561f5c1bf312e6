import { pathToFileURL } from 'node:url';
import { HiveError } from '../errors.ts';
import type { Brain, BrainOutput, BrainTurn, Draft, JsonValue, TimerRequest } from './types.ts';
import { memoryAccess } from '../memory/tool.ts';
import type { ModuleContext, ModuleHandler } from './define.ts';

export { defineBrain, type ModuleContext, type ModuleHandler } from './define.ts';

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
    withdraw(options = {}) {
      const conversation = options.conversation ?? (input.kind === 'message' ? input.message.conversation : undefined);
      if (!options.question && !conversation) throw new HiveError('E_BRAIN', 'ctx.withdraw() on a timer needs { question } or { conversation }');
      messages.push({
        to: 'god',
        act: 'done',
        subject: 'Withdrawn',
        body: options.reason ?? 'The question is withdrawn: the asker moved on.',
        requires_reply: false,
        in_reply_to: options.question ?? null,
        ...(conversation ? { conversation } : {}),
      });
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
