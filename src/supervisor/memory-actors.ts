import { ensureProviderSummarizers } from '../brains/summarizers.ts';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import type { MemoryHostApi, MemoryHostSettings, MinerHostApi, ReflectorHostApi, WorkerEvent } from '../protocol/worker.ts';
import type { Worker } from 'node:worker_threads';
import type { HiveConfig } from '../config/schema.ts';
import type { HostChild } from './host-child.ts';
import { WorkerHandle } from './worker-handle.ts';
import type { SupervisorContext } from './context.ts';
import { superviseWorker } from './supervise.ts';
import { runtimeActorRow, type ActorStatus } from './status.ts';
import { HiveError } from '../errors.ts';
import { exposeJobs, type MemoryJobs } from '../memory/jobs.ts';
import { createPoolJobs } from '../memory/pool.ts';
import { runMinePass, type MinePassResult } from '../memory/mine.ts';
import { condenseAgentMemory, type ReflectResult } from '../memory/reflect.ts';
import { condenseSettingsOf, mineSettingsOf, resolveSummarizer } from '../memory/settings.ts';
import { drainWithin } from './drain.ts';

type Kind = 'miner' | 'reflector';

/**
 * The memory actors of a running hive, as the supervisor sees them: the miner and the
 * reflector, each a supervised worker (restarted with backoff like the router), and the
 * piscina pool they share, which lives here in the main thread.
 */
export class MemoryActors {
  private miner: HostChild<MinerHostApi> | null = null;
  private reflector: HostChild<ReflectorHostApi> | null = null;
  private jobs: MemoryJobs | null = null;
  private starting: Promise<unknown> = Promise.resolve();
  private readonly values: Record<Kind, string> = { miner: 'stopped', reflector: 'stopped' };

  private readonly config: HiveConfig;

  constructor(private readonly ctx: SupervisorContext) {
    this.config = ctx.config;
  }

  private get settings(): MemoryHostSettings {
    return { memory: this.config.memory, configDir: this.config.configDir };
  }

  /**
   * Starts both actors (after the router: docs/architecture.md, "Start and restore")
   * without holding up the hive's start: memory is not on the message path, and starting
   * two more workers first would delay the first delivery. `started()` resolves once
   * both run; the pool starts on its first job.
   */
  start(): void {
    if (!this.config.memory.enabled) return;
    this.jobs = createPoolJobs({ maxThreads: this.config.memory.poolThreads });
    this.miner = this.child<MinerHostApi>('miner', 'miner-host');
    this.reflector = this.child<ReflectorHostApi>('reflector', 'reflector-host');
    this.starting = Promise.all([this.miner.start(), this.reflector.start()]);
  }

  /** Resolves when the memory actors run (or failed to start for good). */
  started(): Promise<void> {
    return this.starting.then(() => undefined);
  }

  async stop(): Promise<void> {
    await this.starting.catch(() => undefined);
    await Promise.all([this.miner?.stop(), this.reflector?.stop()]);
    await this.jobs?.close();
    this.jobs = null;
  }

  private child<Api extends MemoryHostApi>(kind: Kind, entry: 'miner-host' | 'reflector-host'): HostChild<Api> {
    return superviseWorker<Api>(this.ctx, kind, {
      start: async () => {
        const handle = await WorkerHandle.start<Api>(entry, { hostId: kind, root: this.config.root, memorySettings: this.settings }, (e) => this.onEvent(e));
        try {
          const port = exposeJobs(this.jobs!);
          await handle.call(async (api) => (api as unknown as Comlink.Remote<MemoryHostApi>).attachJobs(Comlink.transfer(port, [port])));
          await handle.call(async (api) => (api as unknown as Comlink.Remote<MemoryHostApi>).start());
        } catch (err) {
          await handle.terminate();
          throw err;
        }
        return handle;
      },
      drain: async (handle) => {
        await drainWithin(handle.call(async (api) => (api as unknown as Comlink.Remote<MemoryHostApi>).stop()), 10_000);
      },
    });
  }

  private onEvent(e: WorkerEvent): void {
    if (e.type === 'memory.state') {
      this.values[e.actor] = e.value;
      this.ctx.events.emit('state', { actor: e.actor, value: e.value });
    } else if (e.type === 'memory.mined') {
      this.ctx.events.emit('mined', e.result);
    } else if (e.type === 'memory.condensed') {
      if (e.result.status === 'condensed') this.notifyMiner(e.result.agent);
      this.ctx.events.emit('condensed', e.result);
    }
  }

  /** Rows for `hive status`. */
  status(): ActorStatus[] {
    const rows: ActorStatus[] = [];
    for (const [kind, child] of [['miner', this.miner], ['reflector', this.reflector]] as const) {
      if (child) rows.push(runtimeActorRow(kind, kind, this.values[kind], child));
    }
    return rows;
  }

  /** The worker of a memory actor, or null (tests end it to make a crash). */
  workerOf(kind: Kind): Worker | null {
    return (kind === 'miner' ? this.miner : this.reflector)?.handle?.worker ?? null;
  }

  /** A memory changed: both actors take a look (mine soon, condense if oversized). */
  notify(agent: string): void {
    this.notifyMiner(agent);
    void this.started().then(() => this.reflector?.handle?.call(async (api) => api.notify(agent))).catch(() => undefined);
  }

  private notifyMiner(agent: string): void {
    void this.started().then(() => this.miner?.handle?.call(async (api) => api.notify(agent))).catch(() => undefined);
  }

  /** Mines now through the miner actor; without one (memory disabled), in this thread. */
  async mine(force = false): Promise<MinePassResult> {
    await this.started();
    const handle = this.miner?.handle;
    if (!handle) {
      const jobs = this.jobs ?? createPoolJobs({ maxThreads: this.config.memory.poolThreads });
      try {
        return await runMinePass(this.config.root, mineSettingsOf(this.config.memory, this.config.configDir), jobs, { force });
      } finally {
        if (jobs !== this.jobs) await jobs.close();
      }
    }
    const r = await handle.call(async (api) => api.mine(force));
    if (!r.result) throw new HiveError('E_IO', `Mining failed: ${r.error ?? 'unknown error'}`);
    return r.result;
  }

  /** Condenses through the reflector actor (queued behind any condense in progress). */
  async condense(agent: string, force = true): Promise<ReflectResult> {
    await this.started();
    const handle = this.reflector?.handle;
    if (handle) return handle.call(async (api) => api.condense(agent, force));
    const { root, memory, configDir } = this.config;
    ensureProviderSummarizers();
    return condenseAgentMemory(root, agent, { settings: condenseSettingsOf(memory), summarizer: resolveSummarizer(root, agent, memory, configDir) });
  }
}
