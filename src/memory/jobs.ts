import { MessageChannel, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { MineWingResult, MineWingTask } from './mine-wing.ts';
import type { SnapshotResult } from './snapshot.ts';
import type { CondenseResult, CondenseTask } from './condense.ts';
import { runMemoryTask, type MemoryTask } from './task.ts';

/**
 * Memory batch work (mining a wing, building the snapshot, condensing a memory) as
 * jobs. The hive runs them on one piscina pool in the main thread (`pool.ts`), shared by
 * the miner and the reflector (each reaches it through a MessagePort); tools without a
 * hive (the CLI, tests) make their own pool or run the jobs inline.
 */
export interface MemoryJobs {
  mineWing(task: MineWingTask): Promise<MineWingResult>;
  snapshot(root: string): Promise<SnapshotResult>;
  condense(task: CondenseTask): Promise<CondenseResult>;
  close(): Promise<void>;
}

export function jobsFrom(run: (task: MemoryTask) => Promise<unknown>, close: () => Promise<void>): MemoryJobs {
  return {
    mineWing: (task) => run({ kind: 'mine-wing', task }) as Promise<MineWingResult>,
    snapshot: (root) => run({ kind: 'snapshot', root }) as Promise<SnapshotResult>,
    condense: (task) => run({ kind: 'condense', task }) as Promise<CondenseResult>,
    close,
  };
}

/** Runs jobs in the calling thread (tests, tiny hives). */
export function inlineJobs(): MemoryJobs {
  return jobsFrom(async (task) => runMemoryTask(task), async () => undefined);
}

interface JobsApi {
  run(task: MemoryTask): Promise<unknown>;
}

/** A port a worker can use to run jobs on `jobs` (hand it over with Comlink.transfer). */
export function exposeJobs(jobs: MemoryJobs): MessagePort {
  const { port1, port2 } = new MessageChannel();
  const api: JobsApi = {
    run: (task) => {
      if (task.kind === 'mine-wing') return jobs.mineWing(task.task);
      if (task.kind === 'snapshot') return jobs.snapshot(task.root);
      return jobs.condense(task.task);
    },
  };
  Comlink.expose(api, nodeEndpoint(port1));
  port1.unref();
  return port2;
}

/** The worker side of `exposeJobs`. */
export function connectJobs(port: MessagePort): MemoryJobs {
  const remote = Comlink.wrap<JobsApi>(nodeEndpoint(port));
  port.unref();
  return jobsFrom(
    (task) => remote.run(task),
    async () => port.close(),
  );
}
