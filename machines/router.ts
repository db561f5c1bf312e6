import { assign, fromPromise, setup } from 'xstate';

/**
 * The router actor's machine. It routes whenever an outbox changed (file event or a
 * sender's direct notice), and on a slow safety poll; changes that arrive while a
 * pass runs trigger one more pass right after it.
 *
 *   idle ──outbox changed / poll──► routing ──► idle   (or routing again when dirty)
 *
 * Pure: the routing pass and the poll timer source are supplied by `actors/router-host.ts`.
 */

export interface RouterContext {
  passes: number;
  delivered: number;
  rejected: number;
  dirty: boolean;
  more: boolean;
  stopRequested: boolean;
}

export interface RoutePassOutput {
  delivered: number;
  rejected: number;
  more: boolean;
}

export type RouterEvent = { type: 'hive.outbox.changed' } | { type: 'hive.router.poll' } | { type: 'hive.stop' };

function notProvided(name: string): never {
  throw new Error(`router machine: actor "${name}" must be supplied with .provide()`);
}

export const routerEffects = {
  routePass: fromPromise<RoutePassOutput, void>(async () => notProvided('routePass')),
};

export const routerMachine = setup({
  types: { context: {} as RouterContext, events: {} as RouterEvent },
  actors: routerEffects,
  guards: {
    again: ({ context }) => context.dirty || context.more,
    stopRequested: ({ context }) => context.stopRequested,
  },
}).createMachine({
  id: 'router',
  initial: 'routing',
  context: { passes: 0, delivered: 0, rejected: 0, dirty: false, more: false, stopRequested: false },
  on: {
    'hive.stop': { actions: assign({ stopRequested: true }) },
  },
  states: {
    idle: {
      always: [
        { guard: 'stopRequested', target: 'stopped' },
        { guard: 'again', target: 'routing' },
      ],
      on: {
        'hive.outbox.changed': 'routing',
        'hive.router.poll': 'routing',
        'hive.stop': 'stopped',
      },
    },
    routing: {
      entry: assign({ dirty: false }),
      on: {
        'hive.outbox.changed': { actions: assign({ dirty: true }) },
        'hive.router.poll': { actions: assign({ dirty: true }) },
      },
      invoke: {
        src: 'routePass',
        onDone: {
          target: 'idle',
          actions: assign(({ context, event }) => ({
            passes: context.passes + 1,
            delivered: context.delivered + event.output.delivered,
            rejected: context.rejected + event.output.rejected,
            more: event.output.more,
          })),
        },
      },
    },
    stopped: { type: 'final' },
  },
});
