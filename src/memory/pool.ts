import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { compiledEntry } from '../supervisor/bundle.ts';
import { workerExecArgv, workerResourceLimits } from '../supervisor/worker-handle.ts';
import { jobsFrom, type MemoryJobs } from './jobs.ts';

/**
 * The piscina pool that runs memory jobs (main thread only: it compiles its task file
 * with esbuild, which worker bundles must not carry).
 */
export interface PoolOptions {
  maxThreads: number;
  /** ms an idle pool thread lives (default 30 s). */
  idleTimeoutMs?: number;
}

/**
 * A piscina pool running `src/memory/pool-task.ts` (compiled: pool threads need no tsx).
 * Threads start on the first job and leave when idle.
 * @example const jobs = createPoolJobs({ maxThreads: 2 }); await jobs.snapshot(root); await jobs.close();
 */
export function createPoolJobs(options: PoolOptions): MemoryJobs {
  let pool: Promise<Piscina> | null = null;
  const get = () =>
    (pool ??= compiledEntry('pool-task').then(
      (file) =>
        new Piscina({
          filename: pathToFileURL(file).href,
          minThreads: 0,
          maxThreads: options.maxThreads,
          idleTimeout: options.idleTimeoutMs ?? 30_000,
          execArgv: workerExecArgv(),
          resourceLimits: workerResourceLimits(),
        }),
    ));
  return jobsFrom(
    async (task) => (await get()).run(task),
    async () => {
      if (pool) await (await pool).destroy();
      pool = null;
    },
  );
}

