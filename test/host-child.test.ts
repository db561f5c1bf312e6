import { describe, expect, it } from 'vitest';
import { HostChild, type HostChildHooks } from '../src/supervisor/host-child.ts';
import type { WorkerHandle } from '../src/supervisor/worker-handle.ts';
import type { WorkerExit } from '../src/supervisor/worker-handle.ts';

// A stand-in for a worker thread: what HostChild uses of a WorkerHandle, and a crash.
function fakeThread(threadId: number) {
  let settle!: (x: WorkerExit) => void;
  const exited = new Promise<WorkerExit>((r) => (settle = r));
  const t = {
    threadId,
    exit: null as WorkerExit | null,
    exited,
    expected: false,
    terminated: 0,
    markExpectedExit() {
      t.expected = true;
    },
    async terminate() {
      t.expected = true; // as WorkerHandle.terminate: the exit it causes is expected
      t.terminated += 1;
      t.exit ??= { code: 1, error: null, expected: true };
      settle(t.exit);
    },
    crash() {
      t.exit = { code: 1, error: new Error('boom'), expected: false };
      settle(t.exit);
    },
  };
  return t;
}
type FakeThread = ReturnType<typeof fakeThread>;

const policy = { maxRestarts: 5, withinMs: 60_000, backoff: { initialMs: 1, maxMs: 1, factor: 1, jitter: 0 } };

/**
 * A child whose first start is immediate and whose restarts wait on a gate the test opens
 * (a restart stuck restoring from a store that does not answer). `tellBorn`: the start
 * reports its thread before its actors are up, as the agent hosts' start does.
 */
function gatedChild(tellBorn: boolean) {
  const threads: FakeThread[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let restarting!: () => void;
  const restartBegun = new Promise<void>((r) => (restarting = r));
  const hooks: HostChildHooks<unknown> = {
    async start(attempt, born) {
      const t = fakeThread(threads.length + 1);
      threads.push(t);
      const handle = t as unknown as WorkerHandle<unknown>;
      if (tellBorn) born?.(handle); // (an older HostChild passed none)
      if (attempt > 0) {
        restarting();
        await gate;
      }
      return handle;
    },
    async drain() {},
    onCrashed() {},
    onRestarted() {},
    onFailed() {},
  };
  return { child: new HostChild('agent-x', policy, hooks), threads, open, restartBegun };
}

describe('a supervised worker stopped while it restarts', () => {
  it('a thread reported born is ended by the stop at once, without waiting for its start; nothing outlives the child', async () => {
    const { child, threads, open, restartBegun } = gatedChild(true);
    await child.start();
    expect(child.state()).toBe('running');
    threads[0]!.crash(); // the thread dies: the child restarts it, and the restart hangs
    await restartBegun;
    expect(child.state()).toBe('restarting');
    await child.stop(); // a lease lost meanwhile: the agent must stop here
    expect(child.state()).toBe('stopped');
    expect(threads[1]!.terminated).toBeGreaterThan(0); // ended by the stop, while its start still waited
    expect(threads[1]!.expected).toBe(true);
    open(); // the start finishes late: it must not bring anything up
    await new Promise((r) => setTimeout(r, 20));
    expect(child.handle).toBeNull();
    expect(threads).toHaveLength(2);
  });

  it('a start that reports no thread early is ended when it finishes after the stop', async () => {
    const { child, threads, open, restartBegun } = gatedChild(false);
    await child.start();
    threads[0]!.crash();
    await restartBegun;
    await child.stop();
    expect(threads[1]!.terminated).toBe(0); // not known to the child yet
    open();
    await new Promise((r) => setTimeout(r, 20));
    expect(threads[1]!.terminated).toBeGreaterThan(0);
    expect(child.handle).toBeNull();
    expect(child.state()).toBe('stopped');
  });

  it('a stop of a running child still drains and ends its thread (and the restart path is unchanged)', async () => {
    const { child, threads } = gatedChild(true);
    await child.start();
    await child.stop();
    expect(threads[0]!.terminated).toBe(1);
    expect(child.state()).toBe('stopped');
  });
});
