import { createActor, fromPromise, type Actor } from 'xstate';
import { supervisedChildMachine, type RestartPolicy } from '../../machines/supervised-child.ts';
import type { WorkerHandle } from './worker-handle.ts';

export interface HostChildHooks<Api> {
  /**
   * Start a fresh worker (new thread) and bring its actors up; resolves when running.
   * `born` is told of the thread as soon as it exists, before its actors are up: a stop
   * that comes meanwhile ends it there.
   */
  start(attempt: number, born: (handle: WorkerHandle<Api>) => void): Promise<WorkerHandle<Api>>;
  /** Ask a running worker to finish its turn and stop; the child terminates it afterwards. */
  drain(handle: WorkerHandle<Api>): Promise<void>;
  onCrashed(info: { error: string; restarts: number; delayMs: number }): void;
  onRestarted(info: { restarts: number; threadId: number }): void;
  onFailed(info: { error: string; restarts: number }): void;
}

/**
 * One supervised worker: the pure supervised-child machine with effects that start,
 * watch and stop a real thread. An unexpected exit becomes `hive.child.crashed`.
 */
export class HostChild<Api> {
  handle: WorkerHandle<Api> | null = null;
  readonly actor: Actor<typeof supervisedChildMachine>;
  private readonly firstStart: Promise<void>;
  /** The thread of a start still in flight (its actors are being brought up). */
  private starting: WorkerHandle<Api> | null = null;
  /**
   * Set by the stop. A start in flight when the machine stops is not waited for (it may wait
   * on a store that does not answer), so whatever it brings up after that is ended at once:
   * no worker may outlive its child (a cluster machine that lost an agent's lease while the
   * agent was restarting ran it on, unleased, beside its new owner).
   */
  private stopRequested = false;

  constructor(
    readonly id: string,
    policy: RestartPolicy,
    hooks: HostChildHooks<Api>,
  ) {
    const machine = supervisedChildMachine.provide({
      actors: {
        startHost: fromPromise(async ({ input }) => {
          const handle = await hooks.start(input.attempt, (born) => {
            this.starting = born;
            if (this.stopRequested) void born.terminate();
          }).finally(() => (this.starting = null));
          if (this.stopRequested) {
            await handle.terminate(); // its exit counts as expected
            throw new Error('stopped while it was starting');
          }
          // Died while it was being started (a turn deadline can end it there): that start
          // failed. A crash event now would reach the machine before it is running, and be lost.
          if (handle.exit && !handle.exit.expected) throw handle.exit.error ?? new Error(`worker exited with code ${handle.exit.code} while starting`);
          this.handle = handle;
          void handle.exited.then((x) => {
            if (x.expected || this.handle !== handle) return;
            this.handle = null;
            const error = x.error?.message ?? `worker exited with code ${x.code}`;
            this.actor.send({ type: 'hive.child.crashed', error });
          });
        }),
        stopHost: fromPromise(async () => {
          this.stopRequested = true;
          if (this.starting) await this.starting.terminate(); // its actors are not up: nothing to drain
          const handle = this.handle;
          this.handle = null;
          if (!handle) return;
          handle.markExpectedExit();
          try {
            await hooks.drain(handle);
          } finally {
            await handle.terminate();
          }
        }),
      },
      actions: {
        reportCrashed: ({ context }) =>
          hooks.onCrashed({ error: context.lastError ?? 'unknown', restarts: context.restarts, delayMs: context.delayMs }),
        reportRestarted: ({ context }) => hooks.onRestarted({ restarts: context.restarts, threadId: this.handle?.threadId ?? -1 }),
        reportFailed: ({ context }) => hooks.onFailed({ error: context.lastError ?? 'unknown', restarts: context.restarts }),
      },
    });
    this.actor = createActor(machine, { input: { id, policy } });
    this.firstStart = new Promise<void>((resolve) => {
      const sub = this.actor.subscribe((s) => {
        if (s.matches('running') || s.matches('failed') || s.status !== 'active') {
          sub.unsubscribe();
          resolve();
        }
      });
    });
  }

  /** Starts the worker; resolves once it runs (or has failed for good). */
  start(): Promise<void> {
    this.actor.start();
    return this.firstStart;
  }

  /** Graceful stop: drain, terminate, final state `stopped`. */
  async stop(): Promise<void> {
    if (this.actor.getSnapshot().status !== 'active') return;
    await new Promise<void>((resolve) => {
      const sub = this.actor.subscribe({
        next: (s) => {
          if (s.status !== 'active') {
            sub.unsubscribe();
            resolve();
          }
        },
        complete: () => resolve(),
      });
      this.actor.send({ type: 'hive.child.stop' });
      if (this.actor.getSnapshot().status !== 'active') resolve();
    });
  }

  state(): string {
    return String(this.actor.getSnapshot().value);
  }

  restarts(): number {
    return this.actor.getSnapshot().context.restarts;
  }
}
