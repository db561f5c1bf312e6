/**
 * What a module brain's file needs: `defineBrain` and its types, and nothing of the runtime
 * (the package's `hive-runtime/brain` entry is this file: importing it loads no supervisor,
 * no esbuild, no worker pool). Imports here are types only.
 */
import type { Act } from '../protocol/message.ts';
import type { AgentIdentity, BrainInput, BrainOutput, Draft, JsonValue } from './types.ts';
import type { MemoryAccess } from '../memory/tool.ts';

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
  /**
   * Withdraw a question this agent asked (it moved on: a default taken, the work done):
   * `question` by id, or every open question of this agent in `conversation` (default: the
   * input message's). A withdrawn question leaves `hive ask` and the inspector, and an
   * answer to it is refused with the reason.
   */
  withdraw(options?: { question?: string; conversation?: string; reason?: string }): void;
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
 * import { defineBrain } from 'hive-runtime/brain';
 * export default defineBrain((input, ctx) => {
 *   if (input.kind === 'message' && input.message.act === 'request') ctx.reply(`done: ${input.message.body}`);
 * });
 */
export function defineBrain(handler: ModuleHandler): ModuleHandler {
  return handler;
}
