import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, waitFor } from 'xstate';
import { backoffDelay, recentCrashes, supervisedChildMachine } from '../machines/supervised-child.ts';
import { agentMachine, type FetchInput, type PersistedAgentContext, type Work } from '../machines/agent.ts';
import { routerMachine, type RoutePassOutput } from '../machines/router.ts';
import { createMessage } from '../src/protocol/message.ts';

describe('restart policy', () => {
  it('backoff doubles up to the cap, jitter stays within its band', () => {
    const p = { initialMs: 100, maxMs: 1_000, factor: 2, jitter: 0 };
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(p, n, 0.5))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    const j = { ...p, jitter: 0.2 };
    expect(backoffDelay(j, 1, 0)).toBe(160);
    expect(backoffDelay(j, 1, 1)).toBe(240);
  });

  it('only crashes inside the window count toward the intensity limit', () => {
    expect(recentCrashes([0, 5_000, 9_000], 10_000, 5_000)).toEqual([5_000, 9_000, 10_000]);
  });
});

function childHarness(maxRestarts: number, startFails: () => boolean) {
  const clock = new SimulatedClock();
  const log: string[] = [];
  let now = 0;
  const machine = supervisedChildMachine.provide({
    actors: {
      startHost: fromPromise<void, { id: string; attempt: number }>(async () => {
        if (startFails()) throw new Error('boom');
      }),
      stopHost: fromPromise<void, { id: string }>(async () => undefined),
    },
    actions: {
      reportCrashed: ({ context }) => log.push(`crashed delay=${context.delayMs}`),
      reportRestarted: ({ context }) => log.push(`restarted ${context.restarts}`),
      reportFailed: () => log.push('failed'),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: { id: 'x', policy: { maxRestarts, withinMs: 60_000, backoff: { initialMs: 100, maxMs: 1_000, factor: 2, jitter: 0 } }, now: () => now, random: () => 0.5 },
  });
  return { actor, clock, log, advance: (ms: number) => ((now += ms), clock.increment(ms)) };
}

describe('supervised-child machine', () => {
  it('crash → backoff (simulated clock) → restart → running', async () => {
    const h = childHarness(3, () => false);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('running'));
    h.actor.send({ type: 'hive.child.crashed', error: 'x' });
    expect(h.actor.getSnapshot().value).toBe('backingOff');
    h.advance(99);
    expect(h.actor.getSnapshot().value).toBe('backingOff');
    h.advance(1);
    await waitFor(h.actor, (s) => s.matches('running'));
    h.actor.send({ type: 'hive.child.crashed', error: 'y' });
    h.advance(200);
    await waitFor(h.actor, (s) => s.matches('running'));
    expect(h.log).toEqual(['crashed delay=100', 'restarted 1', 'crashed delay=200', 'restarted 2']);
  });

  it('more than maxRestarts crashes within the window → failed (reported once)', async () => {
    const h = childHarness(2, () => false);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('running'));
    for (let i = 0; i < 2; i++) {
      h.actor.send({ type: 'hive.child.crashed', error: 'x' });
      h.advance(1_000);
      await waitFor(h.actor, (s) => s.matches('running'));
    }
    h.actor.send({ type: 'hive.child.crashed', error: 'x' });
    expect(h.actor.getSnapshot().value).toBe('failed');
    expect(h.log.filter((l) => l === 'failed')).toHaveLength(1);
  });

  it('a restart that fails to start counts as another crash', async () => {
    let fail = false;
    const h = childHarness(5, () => fail);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('running'));
    fail = true;
    h.actor.send({ type: 'hive.child.crashed', error: 'x' });
    h.advance(100);
    await waitFor(h.actor, (s) => s.matches('backingOff') && s.context.crashTimes.length === 2);
    fail = false;
    h.advance(200);
    await waitFor(h.actor, (s) => s.matches('running'));
    expect(h.actor.getSnapshot().context.restarts).toBe(2);
  });

  it('stop from any state ends in stopped', async () => {
    const h = childHarness(3, () => false);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('running'));
    h.actor.send({ type: 'hive.child.stop' });
    await waitFor(h.actor, (s) => s.status === 'done');
    expect(h.actor.getSnapshot().value).toBe('stopped');
  });
});

function agentHarness(inbox: number[], restored?: PersistedAgentContext) {
  const committed: PersistedAgentContext[] = [];
  const fetches: number[] = [];
  const machine = agentMachine.provide({
    actors: {
      fetchWork: fromPromise(async ({ input }) => {
        fetches.push(input.cursor);
        const next = inbox.filter((s) => s > input.cursor).slice(0, 2);
        if (next.length === 0) return null;
        return {
          entries: next.map((seq) => ({ seq, message: createMessage({ from: 'a', to: 'b', act: 'inform', body: String(seq) }) })),
          timers: [],
          poison: null,
          skipTo: null,
          more: inbox.filter((s) => s > input.cursor).length > next.length,
        } satisfies Work;
      }),
      think: fromPromise(async ({ input }) => ({
        cursor: input.work.entries.at(-1)!.seq,
        messages: [],
        brainState: { seen: [...(((input.context.brainState as { seen?: number[] }) ?? {}).seen ?? []), ...input.work.entries.map((e) => e.seq)] },
        timers: [],
        handled: input.work.entries.length,
      })),
      commit: fromPromise(async ({ input }) => {
        committed.push(input.next);
      }),
    },
  });
  const snapshot = restored
    ? machine.resolveState({ value: 'idle', context: { ...restored, work: null, result: null, wakePending: true, stopRequested: false } })
    : undefined;
  const actor = createActor(machine, { input: { agentId: 'b' }, ...(snapshot ? { snapshot } : {}) });
  return { actor, committed, fetches, inbox };
}

describe('agent machine', () => {
  it('drains the inbox in batches: fetching → thinking → committing, then idle', async () => {
    const h = agentHarness([1, 2, 3]);
    const values: string[] = [];
    h.actor.subscribe((s) => values.push(String(s.value)));
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('idle') && s.context.cursor === 3);
    expect(h.committed.map((c) => c.cursor)).toEqual([2, 3]);
    expect(h.actor.getSnapshot().context).toMatchObject({ handled: 3, turns: 2, brainState: { seen: [1, 2, 3] } });
    expect(values).toContain('thinking');
    expect(values).toContain('committing');
  });

  it('after a commit it fetches again only when the batch was cut or a wake arrived during the turn', async () => {
    const h = agentHarness([1, 2, 3]);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('idle') && s.context.cursor === 3);
    // [1,2] was cut at the batch limit: fetch again; [3] was all there was: no empty fetch.
    expect(h.fetches).toEqual([0, 2]);
    // A delivery (its wake) while the actor thinks: fetched right after the commit.
    h.inbox.push(4, 5);
    h.actor.send({ type: 'hive.wake' });
    await waitFor(h.actor, (s) => s.matches('thinking'));
    h.inbox.push(6);
    h.actor.send({ type: 'hive.wake' });
    await waitFor(h.actor, (s) => s.matches('idle') && s.context.cursor === 6);
    expect(h.fetches).toEqual([0, 2, 3, 5]);
  });

  it('restores from a JSON round trip of the persisted context and continues where it was', async () => {
    const first = agentHarness([1, 2]);
    first.actor.start();
    await waitFor(first.actor, (s) => s.matches('idle') && s.context.cursor === 2);
    const json = JSON.parse(JSON.stringify(first.committed.at(-1))) as PersistedAgentContext;
    first.actor.stop();
    const second = agentHarness([1, 2, 3, 4], json);
    second.actor.start();
    // A snapshot restored with resolveState does not run eventless transitions until an
    // event arrives; the host sends this wake right after start.
    second.actor.send({ type: 'hive.wake' });
    await waitFor(second.actor, (s) => s.matches('idle') && s.context.cursor === 4);
    expect(second.actor.getSnapshot().context).toMatchObject({ handled: 4, turns: 2, brainState: { seen: [1, 2, 3, 4] } });
  });

  it('an effect that rejects turns into an error snapshot (the host crashes the worker)', async () => {
    const machine = agentMachine.provide({
      actors: {
        fetchWork: fromPromise<Work | null, FetchInput>(async () => {
          throw new Error('disk gone');
        }),
      },
    });
    const actor = createActor(machine, { input: { agentId: 'b' } });
    const errors: unknown[] = [];
    actor.subscribe({ error: (e) => errors.push(e) });
    const failed = new Promise<void>((resolve) => actor.subscribe({ error: () => resolve() }));
    actor.start();
    await failed;
    expect(actor.getSnapshot().status).toBe('error');
    expect(String(errors[0])).toContain('disk gone');
  });

  it('stop during a turn finishes the turn and then stops', async () => {
    const h = agentHarness([1, 2, 3, 4, 5]);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('thinking'));
    h.actor.send({ type: 'hive.stop' });
    await waitFor(h.actor, (s) => s.status === 'done');
    expect(h.committed.length).toBe(1);
  });
});

describe('router machine', () => {
  it('a change that arrives during a pass triggers one more pass', async () => {
    let passes = 0;
    let release!: () => void;
    const machine = routerMachine.provide({
      actors: {
        routePass: fromPromise<RoutePassOutput, void>(async () => {
          passes += 1;
          if (passes === 1) await new Promise<void>((r) => (release = r));
          return { delivered: 1, rejected: 0, more: false };
        }),
      },
    });
    const actor = createActor(machine);
    actor.start();
    await waitFor(actor, (s) => s.matches('routing'));
    actor.send({ type: 'hive.outbox.changed' });
    actor.send({ type: 'hive.outbox.changed' });
    release();
    await waitFor(actor, (s) => s.matches('idle') && s.context.passes === 2);
    expect(actor.getSnapshot().context.delivered).toBe(2);
  });
});
