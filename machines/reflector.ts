import { assign, fromPromise, setup } from 'xstate';

/**
 * The reflector actor's machine: one condense at a time, from a queue. It scans for
 * oversized memories at start and on a schedule; `hive.memory.condense` (on demand,
 * or a notice that a memory grew) queues an agent.
 *
 *   scanning ──► next ──queue empty──► idle ──after(checkEveryMs)──► scanning
 *                 │ ▲                    └── hive.memory.condense ──► next
 *                 ▼ │
 *             condensing (the head of the queue; forced items skip the size thresholds)
 *
 * Pure: the scan and the condense are invoked actors supplied with `.provide()`.
 */

export interface ReflectorSettings {
  checkEveryMs: number;
}

export interface QueuedCondense {
  agent: string;
  /** Condense even below the thresholds (asked for by a person). */
  force: boolean;
}

export interface CondenseOutcome {
  agent: string;
  status: 'condensed' | 'skipped' | 'aborted';
}

export interface ReflectorContext {
  settings: ReflectorSettings;
  queue: QueuedCondense[];
  current: QueuedCondense | null;
  condensed: number;
  aborted: number;
  skipped: number;
  lastError: string | null;
  stopRequested: boolean;
}

export type ReflectorEvent = { type: 'hive.memory.condense'; agent: string; force?: boolean } | { type: 'hive.stop' };

function notProvided(name: string): never {
  throw new Error(`reflector machine: actor "${name}" must be supplied with .provide()`);
}

export const reflectorEffects = {
  /** Agents whose memory is over the thresholds. */
  scan: fromPromise<string[], void>(async () => notProvided('scan')),
  condense: fromPromise<CondenseOutcome, QueuedCondense>(async () => notProvided('condense')),
};

/** Adds to the queue; a forced request upgrades a queued one. */
export function enqueue(queue: QueuedCondense[], item: QueuedCondense): QueuedCondense[] {
  const at = queue.findIndex((q) => q.agent === item.agent);
  if (at < 0) return [...queue, item];
  return queue.map((q, i) => (i === at ? { agent: q.agent, force: q.force || item.force } : q));
}

const errorText = ({ event }: { event: { error: unknown } }) => String((event.error as Error)?.message ?? event.error);

export const reflectorMachine = setup({
  types: { context: {} as ReflectorContext, events: {} as ReflectorEvent, input: {} as { settings: ReflectorSettings } },
  actors: reflectorEffects,
  actions: {
    request: assign(({ context, event }) =>
      event.type === 'hive.memory.condense' ? { queue: enqueue(context.queue, { agent: event.agent, force: event.force === true }) } : {},
    ),
  },
  guards: {
    stopRequested: ({ context }) => context.stopRequested,
    queued: ({ context }) => context.queue.length > 0,
  },
  delays: {
    checkEvery: ({ context }) => context.settings.checkEveryMs,
  },
}).createMachine({
  id: 'reflector',
  initial: 'scanning',
  context: ({ input }) => ({
    settings: input.settings,
    queue: [],
    current: null,
    condensed: 0,
    aborted: 0,
    skipped: 0,
    lastError: null,
    stopRequested: false,
  }),
  on: {
    'hive.stop': { actions: assign({ stopRequested: true }) },
    'hive.memory.condense': { actions: 'request' },
  },
  states: {
    scanning: {
      invoke: {
        src: 'scan',
        onDone: {
          target: 'next',
          actions: assign(({ context, event }) => ({ queue: event.output.reduce((q, agent) => enqueue(q, { agent, force: false }), context.queue) })),
        },
        onError: { target: 'next', actions: assign({ lastError: errorText }) },
      },
    },
    next: {
      always: [{ guard: 'stopRequested', target: 'stopped' }, { guard: 'queued', target: 'condensing' }, { target: 'idle' }],
    },
    idle: {
      after: { checkEvery: 'scanning' },
      on: {
        'hive.memory.condense': { target: 'next', actions: 'request' },
        'hive.stop': 'stopped',
      },
    },
    condensing: {
      entry: assign(({ context }) => ({ current: context.queue[0] ?? null, queue: context.queue.slice(1) })),
      invoke: {
        src: 'condense',
        input: ({ context }) => context.current!,
        onDone: {
          target: 'next',
          actions: assign(({ context, event }) => ({
            current: null,
            condensed: context.condensed + (event.output.status === 'condensed' ? 1 : 0),
            aborted: context.aborted + (event.output.status === 'aborted' ? 1 : 0),
            skipped: context.skipped + (event.output.status === 'skipped' ? 1 : 0),
          })),
        },
        onError: { target: 'next', actions: assign({ current: null, lastError: errorText }) },
      },
    },
    stopped: { type: 'final' },
  },
});
