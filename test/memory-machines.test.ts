import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, waitFor } from 'xstate';
import { minerMachine, type Growth, type MinePassSummary } from '../machines/miner.ts';
import { enqueue, reflectorMachine, type CondenseOutcome, type QueuedCondense } from '../machines/reflector.ts';

/** A promise the test resolves by hand: the effect is "in the middle" until then. */
function gate<T>() {
  let open!: (v: T) => void;
  const p = new Promise<T>((resolve) => (open = resolve));
  return { p, open };
}

function minerHarness(growth: () => Growth[] = () => []) {
  const clock = new SimulatedClock();
  let now = 0;
  const passes: boolean[] = [];
  let pending = gate<MinePassSummary>();
  const machine = minerMachine.provide({
    actors: {
      minePass: fromPromise<MinePassSummary, { force: boolean }>(async ({ input }) => {
        passes.push(input.force);
        return pending.p;
      }),
      checkGrowth: fromPromise<Growth[], void>(async () => growth()),
    },
  });
  const actor = createActor(machine, { clock, input: { settings: { mineEveryMs: 10_000, checkEveryMs: 1_000, growBytes: 100 }, now: () => now } });
  const finish = () => {
    const g = pending;
    pending = gate<MinePassSummary>();
    g.open({ mined: [], documents: 0, ms: 1 });
  };
  return { actor, passes, finish, advance: (ms: number) => ((now += ms), clock.increment(ms)) };
}

describe('miner machine', () => {
  it('mines at start, then on its schedule', async () => {
    const h = minerHarness();
    h.actor.start();
    expect(h.actor.getSnapshot().value).toBe('mining');
    h.finish();
    await waitFor(h.actor, (s) => s.matches('idle'));
    for (let t = 0; t < 9; t++) {
      h.advance(1_000);
      await waitFor(h.actor, (s) => s.matches('idle'));
    }
    expect(h.passes).toHaveLength(1);
    h.advance(1_000);
    await waitFor(h.actor, (s) => s.matches('mining'));
    expect(h.passes).toEqual([false, false]);
  });

  it('mines after a growth check finds a memory grown past growBytes, not before', async () => {
    let grown = 50;
    const h = minerHarness(() => [{ agent: 'a', bytes: grown }]);
    h.actor.start();
    h.finish();
    await waitFor(h.actor, (s) => s.matches('idle'));
    h.advance(1_000);
    await waitFor(h.actor, (s) => s.matches('idle'));
    expect(h.passes).toHaveLength(1);
    grown = 150;
    h.advance(1_000);
    await waitFor(h.actor, (s) => s.matches('mining'));
    expect(h.passes).toHaveLength(2);
  });

  it('a growth notice or an on-demand request during a pass makes exactly one more pass (forced if asked)', async () => {
    const h = minerHarness();
    h.actor.start();
    h.actor.send({ type: 'hive.memory.grew', agent: 'a', bytes: 10 });
    expect(h.actor.getSnapshot().context.again).toBe(false);
    h.actor.send({ type: 'hive.memory.mine', force: true });
    h.actor.send({ type: 'hive.memory.grew', agent: 'a', bytes: 500 });
    h.finish();
    await waitFor(h.actor, (s) => s.context.started === 2);
    expect(h.passes).toEqual([false, true]);
    h.finish();
    await waitFor(h.actor, (s) => s.matches('idle'));
    expect(h.actor.getSnapshot().context.passes).toBe(2);
    h.actor.send({ type: 'hive.memory.grew', agent: 'a', bytes: 500 });
    expect(h.actor.getSnapshot().value).toBe('mining');
  });

  it('a failing pass becomes data (lastError) and the schedule goes on; stop waits for the pass', async () => {
    const h = minerHarness();
    const failing = minerMachine.provide({
      actors: {
        minePass: fromPromise<MinePassSummary, { force: boolean }>(async () => {
          throw new Error('disk on fire');
        }),
      },
    });
    const actor = createActor(failing, { input: { settings: { mineEveryMs: 10_000, checkEveryMs: 1_000, growBytes: 100 } } });
    actor.start();
    await waitFor(actor, (s) => s.matches('idle'));
    expect(actor.getSnapshot().context).toMatchObject({ passes: 1, lastError: 'disk on fire' });
    actor.stop();

    h.actor.start();
    h.actor.send({ type: 'hive.stop' });
    expect(h.actor.getSnapshot().value).toBe('mining');
    h.finish();
    await waitFor(h.actor, (s) => s.status === 'done');
  });
});

function reflectorHarness(oversized: string[]) {
  const clock = new SimulatedClock();
  const order: QueuedCondense[] = [];
  let pending = gate<CondenseOutcome>();
  let scans = 0;
  const machine = reflectorMachine.provide({
    actors: {
      scan: fromPromise<string[], void>(async () => {
        scans++;
        return oversized.splice(0);
      }),
      condense: fromPromise<CondenseOutcome, QueuedCondense>(async ({ input }) => {
        order.push(input);
        return pending.p;
      }),
    },
  });
  const actor = createActor(machine, { clock, input: { settings: { checkEveryMs: 5_000 } } });
  const finish = (status: CondenseOutcome['status'] = 'condensed') => {
    const g = pending;
    pending = gate<CondenseOutcome>();
    g.open({ agent: order.at(-1)!.agent, status });
  };
  return { actor, order, finish, clock, scans: () => scans };
}

describe('reflector machine', () => {
  it('condenses what the scan found, one at a time, then scans again on schedule', async () => {
    const h = reflectorHarness(['a', 'b']);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('condensing'));
    expect(h.order).toEqual([{ agent: 'a', force: false }]);
    h.actor.send({ type: 'hive.memory.condense', agent: 'c', force: true });
    h.actor.send({ type: 'hive.memory.condense', agent: 'b', force: true });
    h.finish();
    await waitFor(h.actor, (s) => h.order.length === 2 && s.matches('condensing'));
    h.finish('aborted');
    await waitFor(h.actor, (s) => h.order.length === 3 && s.matches('condensing'));
    h.finish('skipped');
    await waitFor(h.actor, (s) => s.matches('idle'));
    expect(h.order).toEqual([
      { agent: 'a', force: false },
      { agent: 'b', force: true },
      { agent: 'c', force: true },
    ]);
    expect(h.actor.getSnapshot().context).toMatchObject({ condensed: 1, aborted: 1, skipped: 1 });
    expect(h.scans()).toBe(1);
    h.clock.increment(5_000);
    await waitFor(h.actor, (s) => s.matches('idle') && h.scans() === 2);
  });

  it('an on-demand request while idle runs at once; stop after the current condense', async () => {
    const h = reflectorHarness([]);
    h.actor.start();
    await waitFor(h.actor, (s) => s.matches('idle'));
    h.actor.send({ type: 'hive.memory.condense', agent: 'z' });
    expect(h.actor.getSnapshot().value).toBe('condensing');
    h.actor.send({ type: 'hive.memory.condense', agent: 'y' });
    h.actor.send({ type: 'hive.stop' });
    h.finish();
    await waitFor(h.actor, (s) => s.status === 'done');
    expect(h.order.map((o) => o.agent)).toEqual(['z']);
  });

  it('enqueue dedupes by agent and upgrades to forced', () => {
    expect(enqueue([{ agent: 'a', force: false }], { agent: 'a', force: true })).toEqual([{ agent: 'a', force: true }]);
    expect(enqueue([{ agent: 'a', force: true }], { agent: 'a', force: false })).toEqual([{ agent: 'a', force: true }]);
    expect(enqueue([], { agent: 'b', force: false })).toEqual([{ agent: 'b', force: false }]);
  });
});
