import { ensureProviderSummarizers } from '../brains/summarizers.ts';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import type { MemoryHostApi, MemoryHostSettings, MinerHostApi, ReflectorHostApi, WorkerEvent } from '../../actors/protocol.ts';
import type { HiveConfig } from '../config/schema.ts';
import type { RestartPolicy } from '../../machines/supervised-child.ts';
import { HostChild, type HostChildHooks } from '../supervisor/host-child.ts';
import { WorkerHandle } from '../supervisor/worker-handle.ts';
import type { HiveEvents } from '../supervisor/events.ts';
import type { ActorStatus } from '../supervisor/supervisor.ts';
import { HiveError } from '../errors.ts';
import { exposeJobs, type MemoryJobs } from './jobs.ts';
import { createPoolJobs } from './pool.ts';
import { runMinePass, type MinePassResult } from './mine.ts';
import { condenseAgentMemory, type ReflectResult } from './reflect.ts';
import { condenseSettingsOf, mineSettingsOf, resolveSummarizer } from './settings.ts';
import { drainWithin } from '../supervisor/drain.ts';

/** How the supervisor reports a memory host's crashes, restarts and failure (as for any host). */
export type MemoryHostReports = Pick<HostChildHooks<unknown>, 'onCrashed' | 'onRestarted' | 'onFailed'>;

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

  constructor(
    private readonly config: HiveConfig,
    private readonly policy: RestartPolicy,
    private readonly events: HiveEvents,
    private readonly reports: (kind: Kind) => MemoryHostReports,
  ) {}

  private get settings(): MemoryHostSettings {
    return { memory: this.config.memory, configDir: this.config.configDir };
  }

  /**
   * Starts both actors (after the router, DESIGN §5's order) without holding up the
   * hive's start: memory is not on the message path, and compiling and starting two
   * more workers would delay the first delivery by ~0.4 s. `started()` resolves once
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
    const reports = this.reports(kind);
    return new HostChild<Api>(kind, this.policy, {
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
      onCrashed: reports.onCrashed,
      onRestarted: reports.onRestarted,
      onFailed: reports.onFailed,
    });
  }

  private onEvent(e: WorkerEvent): void {
    if (e.type === 'memory.state') {
      this.values[e.actor] = e.value;
      this.events.emit('state', { actor: e.actor, value: e.value });
    } else if (e.type === 'memory.mined') {
      this.events.emit('mined', e.result);
    } else if (e.type === 'memory.condensed') {
      if (e.result.status === 'condensed') this.notifyMiner(e.result.agent);
      this.events.emit('condensed', e.result);
    }
  }

  /** Rows for `hive status`. */
  status(): ActorStatus[] {
    const rows: ActorStatus[] = [];
    for (const [kind, child] of [['miner', this.miner], ['reflector', this.reflector]] as const) {
      if (!child) continue;
      rows.push({
        id: kind,
        kind,
        brain: '-',
        host: kind,
        state: this.values[kind],
        status: child.state(),
        restarts: child.restarts(),
        inboxDepth: 0,
        cursor: 0,
        handled: 0,
        threadId: child.handle?.threadId ?? null,
        conversation: null,
        busyMs: null,
      });
    }
    return rows;
  }

  /** @internal Terminates an actor's worker as a crash would (tests, chaos). */
  async crash(kind: Kind): Promise<void> {
    const handle = (kind === 'miner' ? this.miner : this.reflector)?.handle;
    if (handle) await handle.worker.terminate();
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
