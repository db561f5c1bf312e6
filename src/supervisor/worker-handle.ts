import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
// Types from the package's own entry (its ESM path has no declarations a consumer could resolve).
import type { Remote } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { WorkerEvent, WorkerInit } from '../protocol/worker.ts';
import { HiveError } from '../errors.ts';
import { sweepThreadIntents } from '../lock/owner.ts';
import { workerEntry } from './bundle.ts';

/**
 * The parent's flags minus module loaders: a process started as `tsx script.ts` (or by a
 * test runner) passes `--import`/`--require` hooks, and every worker would load them
 * again, each at a cost larger than the worker's own start. Worker entries are compiled JavaScript.
 * Process-wide flags a worker refuses (`--perf-basic-prof`, `--title`...: Node throws
 * ERR_WORKER_INVALID_EXEC_ARGV and no worker would ever start) are dropped too; they
 * already apply to the whole process.
 */
export function workerExecArgv(): string[] {
  if (cachedExecArgv) return [...cachedExecArgv];
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (/^--(import|require|loader|experimental-loader)$/.test(a) || a === '-r') {
      i += 1;
      continue;
    }
    if (/^--(import|require|loader|experimental-loader)=/.test(a)) continue;
    out.push(a);
  }
  cachedExecArgv = withoutRefusedFlags(out);
  return [...cachedExecArgv];
}

let cachedExecArgv: string[] | null = null;

/** Asks Node which flags a worker refuses (it checks them before starting the thread). */
export function withoutRefusedFlags(argv: string[]): string[] {
  if (argv.length === 0) return argv;
  try {
    const probe = new Worker('', { eval: true, execArgv: argv, stdout: true, stderr: true });
    probe.on('error', () => undefined); // it only had to be accepted
    probe.unref();
    void probe.terminate();
    return argv;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    const refused = new Set((e.message.split(':').slice(1).join(':').match(/--?[^\s,]+/g) ?? []).map((f) => f.split('=')[0]));
    const kept = argv.filter((a) => !refused.has(a.split('=')[0]!));
    // Unparseable message: keep nothing rather than fail every worker start.
    return kept.length < argv.length ? withoutRefusedFlags(kept) : [];
  }
}

/**
 * The parent's `--max-old-space-size` as a worker's own heap limit: the flag is
 * process-wide and a worker refuses it in `execArgv` (see `workerExecArgv`), so it would
 * otherwise not apply to worker threads at all.
 */
export function workerResourceLimits(argv: readonly string[] = process.execArgv): { maxOldGenerationSizeMb?: number } {
  for (let i = 0; i < argv.length; i++) {
    const m = /^--max[-_]old[-_]space[-_]size(?:=(\d+))?$/.exec(argv[i]!);
    if (!m) continue;
    const mb = Number(m[1] ?? argv[i + 1]);
    if (Number.isInteger(mb) && mb > 0) return { maxOldGenerationSizeMb: mb };
  }
  return {};
}

/** The old-space heap an agent gets in its worker when neither the config nor the parent's flag sets one. */
export const DEFAULT_WORKER_HEAP_MB = 512;

/**
 * The heap limit of an agent host's thread, in MB: `perAgentMb` (the config's
 * `supervisor.workerHeapMb`), else the parent's `--max-old-space-size`, else
 * DEFAULT_WORKER_HEAP_MB, times the agents it carries (a pooled host of 100 agents is
 * not held to one agent's share). A brain that allocates without end then ends its own
 * worker (ERR_WORKER_OUT_OF_MEMORY, a crash like any other) instead of taking the machine.
 * The router and the memory workers have no such limit beyond the parent's flag.
 */
export function workerHeapLimitMb(perAgentMb?: number, agents = 1, argv: readonly string[] = process.execArgv): number {
  return (perAgentMb ?? workerResourceLimits(argv).maxOldGenerationSizeMb ?? DEFAULT_WORKER_HEAP_MB) * Math.max(1, agents);
}

export interface WorkerStartOptions {
  readyTimeoutMs?: number;
  /** Old-space heap limit of the thread (see workerHeapLimitMb); none: the parent's flag, if any. */
  heapMb?: number;
}

export interface WorkerExit {
  code: number | null;
  error: Error | null;
  /** True when the supervisor asked for it (terminate). */
  expected: boolean;
}

/**
 * One worker thread: started from its compiled entry, ready after the handshake, with
 * comlink calls that fail fast when the worker dies (a plain comlink call to a dead
 * worker would wait forever).
 */
export class WorkerHandle<Api> {
  readonly api: Remote<Api>;
  readonly exited: Promise<WorkerExit>;
  private expected = false;
  /** Why the supervisor killed it (a turn deadline): becomes the exit's error. */
  killReason: string | null = null;
  /** Set, synchronously, when the thread has exited (before `exited` settles). */
  exit: WorkerExit | null = null;

  private constructor(
    readonly worker: Worker,
    readonly threadId: number,
    exited: Promise<WorkerExit>,
  ) {
    this.api = Comlink.wrap<Api>(nodeEndpoint(worker));
    this.exited = exited;
  }

  /**
   * Starts a worker and waits for its `host.ready` handshake.
   * @example const h = await WorkerHandle.start<AgentHostApi>('agent-host', init, onEvent);
   */
  static async start<Api>(
    kind: WorkerInit['kind'],
    init: Omit<WorkerInit, 'events' | 'kind'>,
    onEvent: (event: WorkerEvent) => void,
    options: WorkerStartOptions = {},
  ): Promise<WorkerHandle<Api>> {
    const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
    const file = await workerEntry(kind);
    const channel = new MessageChannel();
    const worker = new Worker(file, {
      workerData: { ...init, kind, events: channel.port2 } satisfies WorkerInit,
      transferList: init.telemetry?.relay ? [channel.port2, init.telemetry.relay] : [channel.port2],
      execArgv: workerExecArgv(),
      resourceLimits: options.heapMb ? { maxOldGenerationSizeMb: options.heapMb } : workerResourceLimits(),
    });
    let handle: WorkerHandle<Api> | null = null;
    let firstError: Error | null = null;
    worker.on('error', (err) => {
      firstError ??= err;
    });
    const exited = new Promise<WorkerExit>((resolve) => {
      const thread = worker.threadId;
      worker.once('exit', (code) => {
        channel.port1.close();
        const expected = handle?.expected ?? false;
        // A crashed thread may have died holding an intent marker of a lock it was taking.
        if (!expected) {
          try {
            sweepThreadIntents(init.root, process.pid, thread);
          } catch {
            // best effort: the next start's sweep gets them once this process is gone
          }
        }
        const killed = handle?.killReason;
        const exit = { code, error: firstError ?? (killed ? new HiveError('E_TIMEOUT', killed) : null), expected };
        if (handle) handle.exit = exit;
        resolve(exit);
      });
    });
    const ready = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new HiveError('E_WORKER', `${kind} ${init.hostId} sent no ready handshake within ${readyTimeoutMs} ms`)), readyTimeoutMs);
      channel.port1.on('message', (event: WorkerEvent) => {
        if (event.type === 'host.ready') {
          clearTimeout(timer);
          resolve(event.threadId);
          return;
        }
        onEvent(event);
      });
      void exited.then((x) => {
        clearTimeout(timer);
        reject(new HiveError('E_WORKER', `${kind} ${init.hostId} exited (code ${x.code}) before it was ready${x.error ? `: ${x.error.message}` : ''}`, { cause: x.error }));
      });
    });
    try {
      const threadId = await ready;
      handle = new WorkerHandle<Api>(worker, threadId, exited);
      return handle;
    } catch (err) {
      await worker.terminate();
      throw err;
    }
  }

  /** Runs a call on the worker's API; rejects with E_WORKER if the worker dies first. */
  async call<T>(fn: (api: Remote<Api>) => Promise<T>): Promise<T> {
    return Promise.race([
      fn(this.api),
      this.exited.then((x) => {
        throw new HiveError('E_WORKER', `worker ${this.threadId} exited (code ${x.code}) during a call${x.error ? `: ${x.error.message}` : ''}`);
      }),
    ]);
  }

  /** Stops the thread; its exit is reported as expected. */
  async terminate(): Promise<void> {
    this.expected = true;
    (this.api as unknown as { [Comlink.releaseProxy]?: () => void })[Comlink.releaseProxy]?.();
    await this.worker.terminate();
  }

  /** Terminates the thread as a crash (not expected): the supervisor restarts it; `reason` is the crash error. */
  async kill(reason: string): Promise<void> {
    this.killReason = reason;
    await this.worker.terminate();
  }

  markExpectedExit(): void {
    this.expected = true;
  }
}
