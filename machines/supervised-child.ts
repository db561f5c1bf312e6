import { assign, fromPromise, setup } from 'xstate';

/**
 * Lifecycle of one supervised worker (a host of one or more actors), one_for_one:
 *
 *   starting ──► running ──crash──► crashed ──► backingOff ──after(delay)──► restarting ──► running
 *                                      └── more than maxRestarts within withinMs ──► failed
 *
 * Pure: starting and stopping a worker are invoked actors supplied with `.provide()`;
 * the clock and the random source for jitter come in through `input`, so tests drive
 * them by hand (and XState's `clock` option drives the backoff delay).
 */

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** 0..1: the delay is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
}

export interface RestartPolicy {
  maxRestarts: number;
  withinMs: number;
  backoff: BackoffPolicy;
}

export interface ChildContext {
  id: string;
  policy: RestartPolicy;
  restarts: number;
  /** Times of recent crashes (epoch ms), pruned to the intensity window. */
  crashTimes: number[];
  delayMs: number;
  lastError: string | null;
  now: () => number;
  random: () => number;
}

export type ChildEvent = { type: 'hive.child.crashed'; error: string } | { type: 'hive.child.stop' };

export interface ChildInput {
  id: string;
  policy: RestartPolicy;
  now?: () => number;
  random?: () => number;
}

/**
 * Exponential backoff with jitter for the n-th consecutive restart (n = 0 first). Pure.
 * @example backoffDelay({ initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0 }, 3, 0.5) // 800
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: number): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** attempt);
  const spread = 1 - policy.jitter + 2 * policy.jitter * random;
  return Math.max(0, Math.round(Math.min(policy.maxMs, base * spread)));
}

/** Crash times inside the intensity window ending at `now` (including a crash at `now`). */
export function recentCrashes(times: number[], now: number, withinMs: number): number[] {
  return [...times, now].filter((t) => now - t <= withinMs);
}

function notProvided(name: string): never {
  throw new Error(`supervised-child machine: actor "${name}" must be supplied with .provide()`);
}

export const childEffects = {
  startHost: fromPromise<void, { id: string; attempt: number }>(async () => notProvided('startHost')),
  stopHost: fromPromise<void, { id: string }>(async () => notProvided('stopHost')),
};

export const supervisedChildMachine = setup({
  types: {
    context: {} as ChildContext,
    events: {} as ChildEvent,
    input: {} as ChildInput,
  },
  actors: childEffects,
  actions: {
    // Effects for the supervisor to observe; replaced with .provide({ actions }).
    reportCrashed: () => undefined,
    reportRestarted: () => undefined,
    reportFailed: () => undefined,
  },
  guards: {
    tooManyRestarts: ({ context }) => context.crashTimes.length > context.policy.maxRestarts,
  },
  delays: {
    backoff: ({ context }) => context.delayMs,
  },
}).createMachine({
  id: 'supervised-child',
  initial: 'starting',
  context: ({ input }) => ({
    id: input.id,
    policy: input.policy,
    restarts: 0,
    crashTimes: [],
    delayMs: 0,
    lastError: null,
    now: input.now ?? Date.now,
    random: input.random ?? Math.random,
  }),
  on: {
    'hive.child.stop': { target: '.stopping' },
  },
  states: {
    starting: {
      invoke: {
        src: 'startHost',
        input: ({ context }) => ({ id: context.id, attempt: 0 }),
        onDone: 'running',
        onError: { target: 'crashed', actions: assign({ lastError: ({ event }) => String((event.error as Error)?.message ?? event.error) }) },
      },
    },
    running: {
      on: {
        'hive.child.crashed': { target: 'crashed', actions: assign({ lastError: ({ event }) => event.error }) },
      },
    },
    crashed: {
      entry: [
        assign(({ context }) => {
          const now = context.now();
          const crashTimes = recentCrashes(context.crashTimes, now, context.policy.withinMs);
          return { crashTimes, delayMs: backoffDelay(context.policy.backoff, crashTimes.length - 1, context.random()) };
        }),
        'reportCrashed',
      ],
      always: [{ guard: 'tooManyRestarts', target: 'failed' }, { target: 'backingOff' }],
    },
    backingOff: {
      after: { backoff: 'restarting' },
    },
    restarting: {
      invoke: {
        src: 'startHost',
        input: ({ context }) => ({ id: context.id, attempt: context.restarts + 1 }),
        onDone: { target: 'running', actions: [assign({ restarts: ({ context }) => context.restarts + 1 }), 'reportRestarted'] },
        onError: {
          target: 'crashed',
          actions: assign({
            restarts: ({ context }) => context.restarts + 1,
            lastError: ({ event }) => String((event.error as Error)?.message ?? event.error),
          }),
        },
      },
    },
    failed: {
      entry: 'reportFailed',
      on: { 'hive.child.stop': { target: 'stopped' } },
    },
    stopping: {
      invoke: { src: 'stopHost', input: ({ context }) => ({ id: context.id }), onDone: 'stopped', onError: 'stopped' },
    },
    stopped: { type: 'final' },
  },
});
