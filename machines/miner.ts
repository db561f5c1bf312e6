import { assign, fromPromise, setup } from 'xstate';

/**
 * The miner actor's machine. It mines at start, then on a schedule, on demand, and soon
 * after a memory grew past a threshold (found by a cheap periodic stat, or told by
 * `remember`). Requests that arrive while a pass runs make one more pass right after.
 *
 *   mining ──► idle ──after(until next scheduled pass)──────────► mining
 *               │ ──after(checkEveryMs)──► checking ──grown ≥ growBytes──► mining
 *               │                              └──────otherwise──────► idle
 *               └── hive.memory.mine / hive.memory.grew (≥ growBytes) ──► mining
 *
 * Pure: the pass and the growth check are invoked actors supplied with `.provide()`;
 * the clock comes in through `input` (XState's `clock` option drives the delays).
 */

export interface MinerSettings {
  mineEveryMs: number;
  checkEveryMs: number;
  growBytes: number;
}

export interface MinePassSummary {
  mined: string[];
  documents: number;
  ms: number;
}

export interface Growth {
  agent: string;
  /** |size now − size at the last mine|, in bytes. */
  bytes: number;
}

export interface MinerContext {
  settings: MinerSettings;
  now: () => number;
  /** Passes started and completed (on-demand callers wait for `passes` to pass a mark). */
  started: number;
  passes: number;
  nextMineAt: number;
  lastMineAt: number | null;
  lastResult: MinePassSummary | null;
  lastError: string | null;
  /** Another pass is wanted after this one, and whether it must re-mine everything. */
  again: boolean;
  force: boolean;
  passForce: boolean;
  stopRequested: boolean;
}

export type MinerEvent =
  | { type: 'hive.memory.mine'; force?: boolean }
  | { type: 'hive.memory.grew'; agent: string; bytes: number }
  | { type: 'hive.stop' };

export interface MinerInput {
  settings: MinerSettings;
  now?: () => number;
}

function notProvided(name: string): never {
  throw new Error(`miner machine: actor "${name}" must be supplied with .provide()`);
}

export const minerEffects = {
  minePass: fromPromise<MinePassSummary, { force: boolean }>(async () => notProvided('minePass')),
  checkGrowth: fromPromise<Growth[], void>(async () => notProvided('checkGrowth')),
};

export const minerMachine = setup({
  types: { context: {} as MinerContext, events: {} as MinerEvent, input: {} as MinerInput },
  actors: minerEffects,
  actions: {
    want: assign(({ context, event }) => ({
      again: true,
      force: context.force || (event.type === 'hive.memory.mine' && event.force === true),
    })),
  },
  guards: {
    again: ({ context }) => context.again,
    stopRequested: ({ context }) => context.stopRequested,
    grownEnough: ({ context, event }) => event.type === 'hive.memory.grew' && event.bytes >= context.settings.growBytes,
  },
  delays: {
    untilMine: ({ context }) => Math.max(0, context.nextMineAt - context.now()),
    checkEvery: ({ context }) => context.settings.checkEveryMs,
  },
}).createMachine({
  id: 'miner',
  initial: 'mining',
  context: ({ input }) => {
    const now = input.now ?? Date.now;
    return {
      settings: input.settings,
      now,
      started: 0,
      passes: 0,
      nextMineAt: now() + input.settings.mineEveryMs,
      lastMineAt: null,
      lastResult: null,
      lastError: null,
      again: false,
      force: false,
      passForce: false,
      stopRequested: false,
    };
  },
  on: {
    'hive.stop': { actions: assign({ stopRequested: true }) },
  },
  states: {
    idle: {
      always: [
        { guard: 'stopRequested', target: 'stopped' },
        { guard: 'again', target: 'mining' },
      ],
      after: { untilMine: 'mining', checkEvery: 'checking' },
      on: {
        'hive.memory.mine': { target: 'mining', actions: 'want' },
        'hive.memory.grew': { guard: 'grownEnough', target: 'mining' },
        'hive.stop': 'stopped',
      },
    },
    checking: {
      on: {
        'hive.memory.mine': { actions: 'want' },
        'hive.memory.grew': { guard: 'grownEnough', actions: 'want' },
      },
      invoke: {
        src: 'checkGrowth',
        onDone: [
          { guard: ({ context, event }) => event.output.some((g) => g.bytes >= context.settings.growBytes), target: 'mining' },
          { target: 'idle' },
        ],
        onError: { target: 'idle', actions: assign({ lastError: ({ event }) => String((event.error as Error)?.message ?? event.error) }) },
      },
    },
    mining: {
      entry: assign(({ context }) => ({ started: context.started + 1, again: false, passForce: context.force, force: false })),
      on: {
        'hive.memory.mine': { actions: 'want' },
        'hive.memory.grew': { guard: 'grownEnough', actions: 'want' },
      },
      invoke: {
        src: 'minePass',
        input: ({ context }) => ({ force: context.passForce }),
        onDone: {
          target: 'idle',
          actions: assign(({ context, event }) => ({
            passes: context.passes + 1,
            lastMineAt: context.now(),
            nextMineAt: context.now() + context.settings.mineEveryMs,
            lastResult: event.output,
            lastError: null,
          })),
        },
        onError: {
          target: 'idle',
          actions: assign(({ context, event }) => ({
            passes: context.passes + 1,
            nextMineAt: context.now() + context.settings.mineEveryMs,
            lastError: String((event.error as Error)?.message ?? event.error),
          })),
        },
      },
    },
    stopped: { type: 'final' },
  },
});
