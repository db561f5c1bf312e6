import { assign, fromPromise, setup } from 'xstate';
import type { HiveMessage } from '../src/protocol/message.ts';
import type { DurableTimer, JsonValue } from '../src/protocol/timer.ts';

/**
 * The agent actor's machine. Pure: every effect (reading the inbox, running the brain,
 * committing) is an invoked promise actor supplied with `.provide()` by `src/agent/agent-actor.ts`.
 *
 *   idle ──wake──► fetching ──work──► thinking ──► committing ──► fetching (more, or woken meanwhile)
 *                      │ └─poison──► rejecting ─────────────────► fetching      └──► idle (otherwise)
 *                      └─nothing──► idle
 *
 * An effect that rejects is not handled here: the actor ends with `status: 'error'`
 * and its host lets the worker crash (the supervisor restores it from state.json).
 * Durable timers are deadlines in context (`timers`), not XState `after` delays, which
 * a restored actor would lose.
 */

export interface WorkEntry {
  seq: number;
  message: HiveMessage;
  /** The same message at an earlier seq of this inbox: the cursor passes it, the brain never sees it. */
  duplicate?: true;
}

export interface Work {
  entries: WorkEntry[];
  timers: DurableTimer[];
  /** An entry that crashed its brain too often: dead-letter it instead of thinking. */
  poison: (WorkEntry & { attempts: number; lastError?: string }) | null;
  /** Seq to skip to when the inbox has a gap that did not fill in time. */
  skipTo: number | null;
  /**
   * Entries may be waiting beyond this batch (it was cut at its limit): fetch again after
   * the commit. Otherwise the actor goes idle unless a wake arrived during the turn.
   */
  more?: boolean;
}

export interface TurnResult {
  /** Last inbox seq this turn covers (the new cursor). */
  cursor: number;
  messages: HiveMessage[];
  brainState: JsonValue;
  timers: DurableTimer[];
  handled: number;
}

export interface AgentContext {
  agentId: string;
  cursor: number;
  handled: number;
  turns: number;
  brainState: JsonValue;
  timers: DurableTimer[];
  work: Work | null;
  result: TurnResult | null;
  wakePending: boolean;
  stopRequested: boolean;
}

/** The part of the context that state.json keeps. */
export type PersistedAgentContext = Pick<AgentContext, 'agentId' | 'cursor' | 'handled' | 'turns' | 'brainState' | 'timers'>;

export type AgentEvent = { type: 'hive.wake' } | { type: 'hive.stop' };

export interface AgentInput {
  agentId: string;
  restored?: PersistedAgentContext;
}

export interface FetchInput {
  /** Whose inbox (one provided machine can serve every agent of a worker). */
  agentId: string;
  cursor: number;
  timers: DurableTimer[];
}

export interface CommitInput {
  next: PersistedAgentContext;
  messages: HiveMessage[];
}

function notProvided(name: string): never {
  throw new Error(`agent machine: actor "${name}" must be supplied with .provide()`);
}

/** Effect placeholders: typed signatures the host replaces with `.provide({ actors })`. */
export const agentEffects = {
  fetchWork: fromPromise<Work | null, FetchInput>(async () => notProvided('fetchWork')),
  think: fromPromise<TurnResult, { context: PersistedAgentContext; work: Work }>(async () => notProvided('think')),
  commit: fromPromise<void, CommitInput>(async () => notProvided('commit')),
  rejectPoison: fromPromise<void, { next: PersistedAgentContext; poison: WorkEntry & { attempts: number; lastError?: string } }>(async () =>
    notProvided('rejectPoison'),
  ),
};

/** The context after a turn is committed. Pure. */
export function applyTurn(context: PersistedAgentContext, result: TurnResult): PersistedAgentContext {
  return {
    agentId: context.agentId,
    cursor: result.cursor,
    handled: context.handled + result.handled,
    turns: context.turns + 1,
    brainState: result.brainState,
    timers: result.timers,
  };
}

/** The context after a committed turn (built without a spread: see afterTurn's note). */
function afterTurn(context: AgentContext): Partial<AgentContext> {
  // Object.assign onto the fresh object, not `{ ...applyTurn(…), work, result }`: in Node
  // 20's V8 a spread followed by new keys takes a slow path (µs per turn).
  return Object.assign(applyTurn(persistedOf(context), context.result!), { work: null, result: null });
}

export function persistedOf(c: AgentContext): PersistedAgentContext {
  return { agentId: c.agentId, cursor: c.cursor, handled: c.handled, turns: c.turns, brainState: c.brainState, timers: c.timers };
}

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as AgentInput,
  },
  actors: agentEffects,
  guards: {
    stopRequested: ({ context }) => context.stopRequested,
    wakePending: ({ context }) => context.wakePending,
  },
}).createMachine({
  id: 'agent',
  initial: 'idle',
  context: ({ input }) => ({
    agentId: input.agentId,
    cursor: input.restored?.cursor ?? 0,
    handled: input.restored?.handled ?? 0,
    turns: input.restored?.turns ?? 0,
    brainState: input.restored?.brainState ?? null,
    timers: input.restored?.timers ?? [],
    work: null,
    result: null,
    wakePending: true,
    stopRequested: false,
  }),
  on: {
    'hive.stop': { actions: assign({ stopRequested: true }) },
    'hive.wake': { actions: assign({ wakePending: true }) },
  },
  states: {
    idle: {
      always: [
        { guard: 'stopRequested', target: 'stopped' },
        { guard: 'wakePending', target: 'fetching' },
      ],
      on: {
        'hive.wake': { target: 'fetching' },
        'hive.stop': { target: 'stopped' },
      },
    },
    fetching: {
      entry: assign({ wakePending: false }),
      invoke: {
        src: 'fetchWork',
        input: ({ context }) => ({ agentId: context.agentId, cursor: context.cursor, timers: context.timers }),
        onDone: [
          {
            guard: ({ event }) => event.output?.poison != null,
            target: 'rejecting',
            actions: assign({ work: ({ event }) => event.output }),
          },
          {
            guard: ({ event }) => event.output?.skipTo != null,
            target: 'fetching',
            reenter: true,
            actions: assign({ cursor: ({ event }) => event.output!.skipTo! }),
          },
          {
            guard: ({ event }) => event.output !== null && (event.output.entries.length > 0 || event.output.timers.length > 0),
            target: 'thinking',
            actions: assign({ work: ({ event }) => event.output }),
          },
          { target: 'idle' },
        ],
      },
    },
    rejecting: {
      invoke: {
        src: 'rejectPoison',
        input: ({ context }) => ({
          next: { ...persistedOf(context), cursor: context.work!.poison!.seq },
          poison: context.work!.poison!,
        }),
        onDone: {
          target: 'fetching',
          actions: assign({ cursor: ({ context }) => context.work!.poison!.seq, work: null }),
        },
      },
    },
    thinking: {
      invoke: {
        src: 'think',
        input: ({ context }) => ({ context: persistedOf(context), work: context.work! }),
        onDone: { target: 'committing', actions: assign({ result: ({ event }) => event.output }) },
      },
    },
    committing: {
      invoke: {
        src: 'commit',
        input: ({ context }) => ({ next: applyTurn(persistedOf(context), context.result!), messages: context.result!.messages }),
        onDone: [
          {
            guard: 'stopRequested',
            target: 'stopped',
            actions: assign(({ context }) => afterTurn(context)),
          },
          {
            // Deliveries during the turn woke it (wakePending); a cut batch left entries behind.
            guard: ({ context }) => context.wakePending || context.work?.more === true,
            target: 'fetching',
            actions: assign(({ context }) => afterTurn(context)),
          },
          {
            target: 'idle',
            actions: assign(({ context }) => afterTurn(context)),
          },
        ],
      },
    },
    stopped: { type: 'final' },
  },
});

export type AgentMachine = typeof agentMachine;
