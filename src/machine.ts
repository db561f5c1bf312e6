/**
 * `hive-runtime/machine`: what an agent written as an XState v5 machine imports. The
 * contract (docs/architecture.md, "Machine agents"):
 *
 * - every delivered message is one event on the machine, typed by its act:
 *   `hive.request`, `hive.inform`, `hive.query`, ..., and `hive.answer` for god's answer to
 *   a question this agent asked; the event carries the whole message (`event.message`);
 * - the machine sends by emitting `hive.send` events (`emit`), most easily through
 *   `hiveSend`, `hiveReply` and `hiveAsk` below; they are committed with the machine's
 *   persisted snapshot and the inbox cursor in one record, so a crash neither loses nor
 *   repeats a message;
 * - `after` delays and delayed `raise`/`sendTo` are durable: kept in the commit record,
 *   re-armed on restore and fired once, even after the hive was down past their deadline;
 * - `hiveThink` (the agent's provider: a command CLI or an OpenAI-compatible model) and
 *   `hiveMemory` (get_memory) are actors Hive provides: name them in `setup({ actors })`
 *   and invoke them by name.
 *
 * Loads nothing of the runtime: only xstate (a peer dependency, shared with your project).
 * @example
 * import { setup } from 'xstate';
 * import { hiveReply, type HiveMachineEvent } from 'hive-runtime/machine';
 * export default setup({ types: { events: {} as HiveMachineEvent } }).createMachine({
 *   initial: 'ready',
 *   states: { ready: { on: { 'hive.request': { actions: hiveReply(({ event }) => `heard: ${event.message.body}`) } } } },
 * });
 */
import { emit, fromPromise } from 'xstate';
import type { Act, HiveMessage } from './protocol/message.ts';
import type { Draft } from './brains/types.ts';
import type { MemorySearchResult } from './memory/search.ts';

export type { HiveMessage, Act };

/** The event a delivered message becomes: by act, or `hive.answer` for god's answer to a question. */
export type HiveMessageEvent = { type: `hive.${Act}` | 'hive.answer'; message: HiveMessage; seq: number };

/** Every event Hive sends to a machine agent (use it as `types.events`, or in a union with your own). */
export type HiveMachineEvent = HiveMessageEvent;

/** What a machine emits to send a message: a brain's draft (the runtime fills id, from, hops and created_at). */
export type HiveSendEvent = { type: 'hive.send' } & Draft;

/** What a machine agent's `emit` may carry to Hive (use it as `types.emitted`). */
export type HiveEmitted = HiveSendEvent;

/**
 * What a helper's function gets: the machine's context and the event of the transition
 * (a message event for `hiveReply`). `C` is your context type.
 */
// `any` by default: the context type is the user's to name.
export interface ActionArgs<C = any> {
  context: C;
  event: { type: string; message?: HiveMessage };
}

/** What `hiveReply`'s function gets: the event is a message event. */
export interface ReplyArgs<C = any> {
  context: C;
  event: HiveMessageEvent;
}

/** An action for `actions:` (an XState `emit` of a `hive.send` event). */
export type HiveAction = never;

/** A text, or a function of the transition's context and event that returns it. */
export type Text<A> = string | ((args: A) => string);
type Extra = Partial<Omit<HiveSendEvent, 'type'>>;

function textOf<A>(text: Text<A>, args: A): string {
  return typeof text === 'function' ? text(args) : text;
}

/**
 * Sends a message to `to` with `act` (`inform` unless said).
 * @example on: { 'hive.inform': { actions: hiveSend('planner', ({ event }) => `done: ${event.message.body}`) } }
 */
export function hiveSend<A extends ActionArgs = ActionArgs>(to: string | ((args: A) => string), body: Text<A>, extra: Extra | ((args: A) => Extra) = {}): HiveAction {
  return emit(((args: A) => ({
    act: 'inform' as Act,
    ...(typeof extra === 'function' ? extra(args) : extra),
    type: 'hive.send' as const,
    to: typeof to === 'function' ? to(args) : to,
    body: textOf(body, args),
  })) as never) as never;
}

/**
 * Answers the message of the current event (an `inform` to its sender, in reply to it and in
 * its conversation).
 */
export function hiveReply<A extends ReplyArgs = ReplyArgs>(body: Text<A>, extra: Extra | ((args: A) => Extra) = {}): HiveAction {
  return emit(((args: A) => {
    const m = args.event.message;
    if (!m) throw new Error(`hiveReply() needs a message event; "${args.event.type}" carries none (reply from a hive.* event, or use hiveSend)`);
    return {
      act: 'inform' as Act,
      ...(typeof extra === 'function' ? extra(args) : extra),
      type: 'hive.send' as const,
      to: m.from,
      in_reply_to: m.id,
      conversation: m.conversation,
      body: textOf(body, args),
    };
  }) as never) as never;
}

/** Asks the people in the loop (a `query` to god with `needs_human`); the answer arrives as `hive.answer`. */
export function hiveAsk<A extends ActionArgs = ActionArgs>(body: Text<A>, extra: Extra | ((args: A) => Extra) = {}): HiveAction {
  return emit(((args: A) => ({
    ...(typeof extra === 'function' ? extra(args) : extra),
    type: 'hive.send' as const,
    to: 'god',
    act: 'query' as Act,
    needs_human: true,
    body: textOf(body, args),
  })) as never) as never;
}

/**
 * Withdraws this agent's open questions in a conversation (it moved on: a default taken):
 * they leave `hive ask` and the inspector, and a late answer is refused with the reason.
 * The conversation defaults to the current event's message's.
 */
export function hiveWithdraw<A extends ActionArgs = ActionArgs>(options: { conversation?: string | ((args: A) => string); reason?: Text<A> } = {}): HiveAction {
  return emit(((args: A) => {
    const conversation = typeof options.conversation === 'function' ? options.conversation(args) : (options.conversation ?? args.event.message?.conversation);
    if (!conversation) throw new Error(`hiveWithdraw() needs { conversation } on "${args.event.type}", which carries no message`);
    return {
      type: 'hive.send' as const,
      to: 'god',
      act: 'done' as Act,
      subject: 'Withdrawn',
      body: options.reason === undefined ? 'The question is withdrawn: the asker moved on.' : textOf(options.reason, args),
      requires_reply: false,
      in_reply_to: null,
      conversation,
    };
  }) as never) as never;
}

/** Input of `hiveThink`: the prompt for the agent's provider. */
export interface HiveThinkInput {
  prompt: string;
}
/** Output of `hiveThink`: the provider's answer text. */
export interface HiveThinkOutput {
  text: string;
}
/** Input of `hiveMemory`: a get_memory search. */
export interface HiveMemoryInput {
  query: string;
  agent?: string;
  limit?: number;
}

function onlyInHive(name: string): never {
  throw new Error(`${name} runs only inside a Hive machine agent (brain kind "machine"); Hive provides it there`);
}

/** The agent's provider as a promise actor (Hive provides it; `brain.provider` in the config). */
export const hiveThink = fromPromise<HiveThinkOutput, HiveThinkInput>(async () => onlyInHive('hiveThink'));

/** get_memory as a promise actor (Hive provides it). */
export const hiveMemory = fromPromise<MemorySearchResult, HiveMemoryInput>(async () => onlyInHive('hiveMemory'));
