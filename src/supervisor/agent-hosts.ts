// Long on purpose: adding, removing, starting and restarting agent hosts share one set of
// maps (records, members, hosts, removals); split apart they would pass them all around.
import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { entryKind } from '../fs/regular-file.ts';
import type { ActorInfo, AgentHostApi, ActorContextSummary, BrainLoadFailure, HostedAgentSpec, WorkerEvent } from '../protocol/worker.ts';
import { brainPreflight, reportConfigFailure } from './config-failure.ts';
import { BrainSchema, type BrainSpec } from '../config/schema.ts';
import type { RegistryEntry } from '../registry/registry.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError, errorMessage } from '../errors.ts';
import { PASSIVE_KINDS } from '../brains/create.ts';
import { committedCursor } from '../queue/committed-cursor.ts';
import { TurnClock } from '../agent/turn-clock.ts';
import type { HostChild } from './host-child.ts';
import { WorkerHandle, workerHeapLimitMb } from './worker-handle.ts';
import { TurnWatchdog, watchdogInterval, type WatchedTurn } from './turn-watchdog.ts';
import { hostIdFor, placeAgents } from './placement.ts';
import { drainWithin } from './drain.ts';
import { flushBudgetMs, openFilesInitOf, type SupervisorContext } from './context.ts';
import { superviseWorker } from './supervise.ts';
import type { LinkableHost, RouterChild } from './router-child.ts';
import { WakeCoalescer } from './wake.ts';
import type { ActorStatus, HostStatus } from './status.ts';
import { agentRow, agentSettingsOf, clusterInitOf, failureOf, hostedSpecOf, isRunnable } from './agent-record.ts';

export type { AgentRecord } from './agent-record.ts';
import type { AgentRecord } from './agent-record.ts';

/**
 * The agents of a running hive and the workers that host them: which worker hosts which
 * agent (placement.ts), starting and restarting those workers, adding and removing an agent
 * at run time, the turn deadline, wake-ups, and the agents' rows of `status`.
 */
export class AgentHosts {
  private readonly records = new Map<string, AgentRecord>();
  private readonly members = new Map<string, string[]>();
  /** Removals under way, by agent: an add of the same agent waits for its removal. */
  private readonly removing = new Map<string, Promise<void>>();
  private readonly hosts = new Map<string, HostChild<AgentHostApi>>();
  /** The live thread of each agent host, from its boot on (its HostChild knows it only once started). */
  private readonly workers = new Map<string, WorkerHandle<AgentHostApi>>();
  private readonly watchdog = new TurnWatchdog(() => this.watchedTurns());
  private readonly wakes = new WakeCoalescer(
    (agent) => this.records.get(agent)?.hostId ?? null,
    (hostId, agents) => void this.hosts.get(hostId)?.handle?.call(async (api) => api.wake(agents)).catch(() => undefined),
  );

  constructor(
    private readonly ctx: SupervisorContext,
    private readonly router: RouterChild,
    private readonly onEvent: (e: WorkerEvent) => void,
  ) {}

  get(id: string): AgentRecord | undefined {
    return this.records.get(id);
  }

  /** Every agent of the registry, each with its committed cursor; those with an invalid brain are skipped (logged). */
  /** `madeNow`: agents whose folders this start made (ensureAgentsReporting): nothing to read of them yet. */
  load(entries: RegistryEntry[], madeNow: ReadonlySet<string> = new Set()): void {
    for (const entry of entries) {
      const parsed = BrainSchema.safeParse(entry.brain);
      if (!parsed.success) {
        appendEvent(this.ctx.root, { type: 'actor.skipped', agent: entry.id, error: `registry brain invalid: ${parsed.error.message}` });
        continue;
      }
      const made = madeNow.has(entry.id);
      const record = this.newRecord(entry, parsed.data, 'stopped', undefined, made);
      if (made) record.madeNow = true;
      this.records.set(entry.id, record);
    }
  }

  /**
   * Places the runnable agents that run `here` (`hostOf`: the pools the config names) and
   * starts their workers. An agent whose brain cannot be started is not (`configFailed`);
   * the returned `failed` names each, with the reason (found before its worker, or by it).
   */
  async startAll(hostOf: Map<string, string | undefined>, here: (id: string) => boolean = () => true): Promise<{ running: number; failed: BrainLoadFailure[] }> {
    const tried = [...this.records.values()].filter((x) => isRunnable(x.entry, x.brain) && here(x.entry.id));
    const runnable: AgentRecord[] = [];
    for (const r of tried) {
      const folder = folderProblem(this.ctx.root, r.entry.id);
      const problem = folder ?? (await brainPreflight(r.brain));
      if (problem) await this.configFailed(r.entry.id, problem, folder !== null);
      else runnable.push(r);
    }
    const placement = placeAgents(runnable.map((r) => ({ id: r.entry.id, host: hostOf.get(r.entry.id) })), this.ctx.config.supervisor.agentsPerWorker);
    for (const [hostId, ids] of placement) {
      this.members.set(hostId, ids);
      for (const id of ids) this.records.get(id)!.hostId = hostId;
    }
    const [total, t0] = [runnable.length, performance.now()];
    let done = 0; // progress for `hive start`: one more worker's agents are up
    const up = (hostId: string) => this.ctx.events.emit('starting', { phase: 'agents', ms: Math.round(performance.now() - t0), done: (done += this.members.get(hostId)?.length ?? 0), total });
    await Promise.all([...this.members.keys()].map((hostId) => this.startHost(hostId).then(() => up(hostId))));
    // Something planted in the hive folder (a symlinked agent folder or CLI settings folder)
    // is not a mistake in the configuration: that agent is failed (god told), the rest starts.
    const failed = tried.filter((r) => r.problem && !r.planted).map((r) => ({ agent: r.entry.id, error: failureOf(r) }));
    return { running: tried.length - failed.length - tried.filter((r) => r.planted).length, failed };
  }

  /**
   * A configuration error: the agent is not started, marked failed (registry, status, log)
   * with the reason, and god is told. Its inbox is left alone: no message is counted
   * against a brain that never ran. A new start (or spawn) tries again.
   */
  private async configFailed(id: string, problem: string, planted = false): Promise<void> {
    const r = this.records.get(id);
    if (r) {
      r.problem = problem;
      r.planted = planted;
      r.entry.status = 'failed';
      r.value = 'stopped';
      const hostId = r.hostId;
      r.hostId = null;
      if (hostId) this.members.set(hostId, (this.members.get(hostId) ?? []).filter((m) => m !== id));
    }
    await reportConfigFailure(this.ctx, id, problem);
  }

  startWatchdog(): void {
    this.watchdog.start(watchdogInterval([this.ctx.config.supervisor.turnTimeoutMs, ...[...this.records.values()].map((r) => this.turnLimitOf(r))]));
  }

  async stopAll(): Promise<void> {
    this.watchdog.stop();
    await Promise.all([...this.hosts.values()].map((h) => h.stop()));
  }

  /** True when the agent has a worker that is running now. */
  isRunning(id: string): boolean {
    const hostId = this.records.get(id)?.hostId;
    return !!hostId && this.hosts.get(hostId)?.state() === 'running';
  }

  /** Adds (or replaces) an agent at run time and starts it, in a running pool or a worker of its own. */
  async add(entry: RegistryEntry, brain: BrainSpec, pool: string | undefined): Promise<void> {
    await this.removing.get(entry.id); // its previous actor is stopped first
    const record = this.newRecord(entry, brain, 'starting', this.records.get(entry.id)?.turnClock);
    this.records.set(entry.id, record);
    if (!isRunnable(entry, brain)) return;
    const problem = folderProblem(this.ctx.root, entry.id) ?? (await brainPreflight(record.brain));
    if (problem) {
      await this.configFailed(entry.id, problem);
      throw new HiveError('E_BAD_CONFIG', failureOf(record));
    }
    const hostId = hostIdFor({ id: entry.id, host: pool }, this.ctx.config.supervisor.agentsPerWorker, this.members);
    record.hostId = hostId;
    this.members.set(hostId, [...(this.members.get(hostId) ?? []), entry.id]);
    const host = this.hosts.get(hostId);
    if (host?.handle) {
      const hosted = await this.hostedSpec(entry.id);
      const res = await host.handle.call(async (api) => api.startActors([hosted]));
      for (const info of res.started) this.started(info.id, info);
      for (const f of res.failed) await this.configFailed(f.agent, f.error, f.code === 'E_NOT_REGULAR');
      await this.router.updateHost(hostId, this.members.get(hostId) ?? []);
    } else await this.startHost(hostId);
    if (record.problem) throw new HiveError('E_BAD_CONFIG', failureOf(record)); // its worker could not load its brain
    this.ctx.events.emit('spawned', { agent: entry.id, host: hostId });
  }

  /**
   * Stops an agent's actor (its worker too, when it was the last agent in it). An `add` of
   * the same agent meanwhile waits for it: two actors of one agent must never run at once
   * (a cluster lease lost and taken again within milliseconds started a second actor while
   * the first, waiting on NATS, was still stopping, and both committed the same turn).
   */
  async remove(id: string): Promise<void> {
    const removal = this.removeNow(id);
    const settled = removal.catch(() => undefined);
    this.removing.set(id, settled);
    try {
      await removal;
    } finally {
      if (this.removing.get(id) === settled) this.removing.delete(id);
    }
  }

  private async removeNow(id: string): Promise<void> {
    const record = this.records.get(id);
    if (!record) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${this.ctx.root}`);
    record.entry.status = 'stopped';
    const hostId = record.hostId;
    record.hostId = null;
    if (hostId) {
      const members = (this.members.get(hostId) ?? []).filter((m) => m !== id);
      const host = this.hosts.get(hostId);
      if (members.length === 0) {
        this.members.delete(hostId);
        this.hosts.delete(hostId);
        await Promise.all([host?.stop(), this.router.updateHost(hostId, [])]); // the router stops routing for it here
      } else {
        this.members.set(hostId, members);
        await host?.handle?.call((api) => api.stopActor(id, this.ctx.config.supervisor.stopGraceMs));
      }
    }
    record.value = 'stopped';
  }

  /** Runs `fn` with the agent's actor stopped, then starts it again (session operations). */
  async withPaused<T>(id: string, fn: () => Promise<T> | T): Promise<T> {
    const record = this.records.get(id);
    if (!record) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${this.ctx.root}`);
    const handle = record.hostId ? this.hosts.get(record.hostId)?.handle : undefined;
    if (!handle) return fn();
    await handle.call((api) => api.stopActor(id, this.ctx.config.supervisor.stopGraceMs));
    try {
      return await fn();
    } finally {
      const spec = await this.hostedSpec(id);
      await handle
        .call((api) => api.startActors([spec]))
        .then(async (res) => {
          for (const info of res.started) this.started(info.id, info);
          for (const f of res.failed) await this.configFailed(f.agent, f.error, f.code === 'E_NOT_REGULAR');
        })
        .catch((err) => appendEvent(this.ctx.root, { type: 'actor.resume-failed', agent: id, error: errorMessage(err) }));
    }
  }

  /** An actor started (its event or startActors' answer, on different ports: whichever comes first). */
  started(id: string, info: ActorInfo): void {
    const r = this.records.get(id);
    // A new thread: nothing waits yet.
    if (r) Object.assign(r, { paused: null, value: info.value, cursor: info.cursor, handled: info.handled, conversation: info.conversation });
  }

  /** Delivered to this agent: wake it (coalesced per host and tick). */
  wake(id: string): void {
    this.wakes.add(id);
  }

  /** The hosts the router links to. */
  linkable(): LinkableHost[] {
    return [...this.hosts].map(([id, host]) => ({ id, handle: host.handle, agents: this.members.get(id) ?? [] }));
  }

  /** The worker thread hosting an agent now, or null (tools, tests, `hive chaos`). */
  workerOf(id: string): WorkerHandle<AgentHostApi> | null {
    const hostId = this.records.get(id)?.hostId;
    return hostId ? (this.hosts.get(hostId)?.handle ?? null) : null;
  }

  isPassive(id: string): boolean {
    const r = this.records.get(id);
    return !r || PASSIVE_KINDS.has(r.brain.kind);
  }

  /** How many agents have a brain of their own (status rows of kind 'agent'), without reading any inbox. */
  agentCount(): number {
    let n = 0;
    for (const r of this.records.values()) if (!PASSIVE_KINDS.has(r.brain.kind)) n += 1;
    return n;
  }

  statusRows(): ActorStatus[] {
    return [...this.records.values()]
      .sort((a, b) => a.entry.id.localeCompare(b.entry.id))
      .map((r) => agentRow(this.ctx.root, r, r.hostId ? this.hosts.get(r.hostId) : undefined, !!r.hostId && this.workers.has(r.hostId)));
  }

  hostRows(): HostStatus[] {
    return [...this.hosts].map(([id, child]) => ({ id, value: child.state(), restarts: child.restarts(), agents: this.members.get(id) ?? [], threadId: child.handle?.threadId ?? null }));
  }

  contexts(): Record<string, ActorContextSummary> {
    const out: Record<string, ActorContextSummary> = {};
    for (const [id, r] of this.records) if (r.context) out[id] = r.context;
    return out;
  }

  private newRecord(entry: RegistryEntry, brain: BrainSpec, value: string, turnClock = new TurnClock(), madeNow = false): AgentRecord {
    return { entry, brain, hostId: null, value, handled: 0, cursor: madeNow ? 0 : committedCursor(this.ctx.root, entry.id), conversation: null, turnClock };
  }

  private hostedSpec(id: string): Promise<HostedAgentSpec> {
    return hostedSpecOf(this.records.get(id)!);
  }

  private async startHost(hostId: string): Promise<void> {
    const agentsOf = () => this.members.get(hostId) ?? [];
    const child = superviseWorker<AgentHostApi>(this.ctx, hostId, {
      agents: agentsOf,
      start: async (_attempt, born) => {
        // A turn the previous thread died in is over: the new thread stamps its own.
        for (const id of agentsOf()) this.records.get(id)?.turnClock.clear();
        const specs = await Promise.all(agentsOf().map((id) => this.hostedSpec(id)));
        const telemetry = this.ctx.observer()?.workerTelemetry(hostId, agentsOf());
        const handle = await WorkerHandle.start<AgentHostApi>(
          'agent-host',
          { hostId, root: this.ctx.root, agentSettings: agentSettingsOf(this.ctx.config), ...(telemetry ? { telemetry } : {}), ...clusterInitOf(this.ctx.config), ...openFilesInitOf(this.ctx.config, 'agentHost'), ...this.ctx.testingInit() },
          this.onEvent,
          { heapMb: workerHeapLimitMb(this.ctx.config.supervisor.workerHeapMb, agentsOf().length) },
        );
        born(handle); // a stop from now on ends this thread, even while its actors restore
        // Watched from here: a brain can run away while its actor is still being started.
        this.workers.set(hostId, handle);
        void handle.exited.then(() => this.workers.get(hostId) === handle && this.workers.delete(hostId));
        // Linked first: once its actors start, a brain may keep the thread from answering.
        await this.router.link(hostId, handle, agentsOf());
        let res;
        try {
          res = await handle.call((api) => api.startActors(specs));
        } catch (err) {
          await handle.terminate();
          throw err;
        }
        for (const info of res.started) this.started(info.id, info);
        for (const f of res.failed) await this.configFailed(f.agent, f.error, f.code === 'E_NOT_REGULAR');
        // Removed while this start was in flight (a cluster lease lost during a restart of a
        // pooled host): it must not run on here.
        const gone = specs.map((x) => x.id).filter((id) => !agentsOf().includes(id));
        for (const id of gone) await handle.call((api) => api.stopActor(id, this.ctx.config.supervisor.stopGraceMs));
        if (res.failed.length > 0 || gone.length > 0) await this.router.updateHost(hostId, agentsOf());
        return handle;
      },
      drain: async (handle) => {
        const grace = this.ctx.config.supervisor.stopGraceMs;
        await drainWithin(handle.call((api) => api.stopAll(grace)), grace + 500 + flushBudgetMs(this.ctx));
      },
      onFailed: (agents) => {
        for (const id of agents) {
          const rec = this.records.get(id);
          if (rec) rec.entry.status = 'failed';
        }
      },
    });
    this.hosts.set(hostId, child);
    await child.start();
    if (agentsOf().length === 0 && this.hosts.get(hostId) === child) {
      // Every agent of it failed to load: the worker has nothing to run.
      this.hosts.delete(hostId);
      this.members.delete(hostId);
      await child.stop();
    }
  }

  /** Turns the deadline watches: agents in a turn whose thread is alive (an idle agent costs one clock read, not an object: --cpu-prof at 10,000 agents). */
  private *watchedTurns(): Iterable<WatchedTurn> {
    for (const r of this.records.values()) {
      if (r.turnClock.startedAt() === null) continue;
      const handle = r.hostId ? this.workers.get(r.hostId) : undefined;
      if (!handle) continue;
      yield {
        agent: r.entry.id,
        clock: r.turnClock,
        limitMs: this.turnLimitOf(r),
        kill: (reason) => {
          appendEvent(this.ctx.root, { type: 'actor.deadline', agent: r.entry.id, host: r.hostId, error: reason });
          // Its pool mates die with it through no fault of theirs.
          for (const id of this.members.get(r.hostId!) ?? []) if (id !== r.entry.id) this.records.get(id)!.forgive = true;
          void handle.kill(reason);
        },
      };
    }
  }

  private turnLimitOf(r: AgentRecord): number {
    return r.entry.turnTimeoutMs ?? this.ctx.config.supervisor.turnTimeoutMs;
  }
}

/**
 * Why an agent's folder cannot be used, or null: a symlink (or a file, a FIFO) in its place
 * would have its state, inbox reads and memory written through to wherever it points. The
 * hive folder is shared, so this is refused like a configuration error of that one agent.
 */
function folderProblem(root: string, id: string): string | null {
  const st = fs.lstatSync(agentPaths(root, id).dir, { throwIfNoEntry: false });
  if (!st || st.isDirectory()) return null;
  const kind = entryKind(st);
  return `agents/${id} is ${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind}, not a folder: nothing is written through it and the agent is not started (put the agent's folder back, or remove it and start again for a new one)`;
}
