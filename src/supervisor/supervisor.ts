import fs from 'node:fs';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import type { AgentHostApi, AgentSettings, HostedAgentSpec, RouterHostApi, WorkerEvent, WorkerInit } from '../../actors/protocol.ts';
import { AgentConfigSchema, BrainSchema, type AgentConfig, type BrainSpec, type HiveConfig } from '../config/schema.ts';
import { ensureAgent, ensureAgents, ensureHive } from '../layout/ensure.ts';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { acquireHiveLock, type HiveLock } from '../lock/hive-lock.ts';
import { readRegistry, updateRegistry, type RegistryEntry } from '../registry/registry.ts';
import { sweepTempFiles, listDir } from '../fs/atomic.ts';
import { sweepDeadIntents } from '../lock/owner.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError, errorMessage } from '../errors.ts';
import { PASSIVE_KINDS } from '../brains/create.ts';
import { createMessage, parseMessage, type HiveMessage, type HiveMessageInput } from '../protocol/message.ts';
import { RESERVED_IDS } from '../protocol/agent-id.ts';
import { stableId } from '../protocol/ids.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { inboxDepth } from '../queue/inbox.ts';
import { committedCursor } from '../queue/committed-cursor.ts';
import { godNotice } from '../agent/compose.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { HostChild } from './host-child.ts';
import { WorkerHandle, workerHeapLimitMb } from './worker-handle.ts';
import { TurnWatchdog, watchdogInterval, type WatchedTurn } from './turn-watchdog.ts';
import { TurnClock } from '../agent/turn-clock.ts';
import { hiveModes, secureHiveRoot, useGroupModes } from '../fs/modes.ts';
import { moduleBrainUrl } from './bundle.ts';
import { hostIdFor } from './placement.ts';
import { HiveEvents } from './events.ts';
import { GodNotices } from './notices.ts';
import { startControlServer, type ControlServer } from './control.ts';
import type { ActorContextSummary } from '../../actors/protocol.ts';
import { HiveObserver, type ObserveOptions } from '../telemetry/observer.ts';
import { startSend } from '../telemetry/spans.ts';
import { startHooksServer } from '../hooks/server.ts';
import type { JsonLineServer } from '../net/json-line.ts';
import { listQuestions, answerQuestion, type Question } from '../human/questions.ts';
import { applyArchiveCap, archiveSession, sweepOrphanSessions } from '../session/archive.ts';
import { brainIdentity, writeSwitchOffer } from '../session/switch.ts';
import { MemoryActors } from '../memory/actors.ts';
import { installSeams, type TestSeams } from '../testing/seams.ts';
import { drainWithin } from './drain.ts';

export interface ActorStatus {
  id: string;
  kind: 'agent' | 'router' | 'passive' | 'miner' | 'reflector';
  brain: string;
  host: string | null;
  /** The actor's machine state (idle, fetching, thinking, committing, ...). */
  state: string;
  /** The supervised worker's lifecycle (running, backingOff, failed, ...) or registry status. */
  status: string;
  restarts: number;
  inboxDepth: number;
  cursor: number;
  handled: number;
  threadId: number | null;
  /** Restore path of a conversational brain's session: full, tail, amnesia or new. */
  conversation: string | null;
  /** How long the turn it is in has been running (ms), or null when it is between turns. */
  busyMs: number | null;
}

interface AgentRecord {
  entry: RegistryEntry;
  brain: BrainSpec;
  hostId: string | null;
  value: string;
  handled: number;
  cursor: number;
  /** Latest context summary reported by the actor (inspector). */
  context?: ActorContextSummary;
  conversation: string | null;
  /** Shared with its worker: when its running turn started (turn deadline, status). */
  turnClock: TurnClock;
  /** The shortage the actor waits out (`disk full`), or null. */
  paused?: string | null;
  /** Its worker was just ended for a pool mate's turn deadline (see HostedAgentSpec.forgiveCrash). */
  forgive?: boolean;
}

const ROUTER_HOST = 'router';

/**
 * The supervisor (main thread): owns hive.lock, starts the router and agent hosts as
 * supervised workers, relays wake-ups (router → agents, agents → router), restarts
 * crashed workers with backoff, and escalates to god when a worker keeps crashing.
 */
export class Supervisor {
  readonly events = new HiveEvents();
  readonly root: string;
  private lock: HiveLock | null = null;
  private router: HostChild<RouterHostApi> | null = null;
  private readonly hosts = new Map<string, HostChild<AgentHostApi>>();
  private readonly members = new Map<string, string[]>();
  private readonly agents = new Map<string, AgentRecord>();
  private routerValue = 'starting';
  /** The shortage the router waits out, or null. */
  private routerPaused: string | null = null;
  private routerHandle: WorkerHandle<RouterHostApi> | null = null;
  private control: ControlServer | null = null;
  private hooks: JsonLineServer | null = null;
  private closing = false;
  private started = false;
  private readonly watchdog = new TurnWatchdog(() => this.watchedTurns());
  private readonly notices: GodNotices;
  /** The live thread of each agent host, from its boot on (its HostChild knows it only once started). */
  private readonly workers = new Map<string, WorkerHandle<AgentHostApi>>();
  private wakeQueue = new Map<string, Set<string>>();
  private wakeScheduled = false;
  /** Telemetry, event-log rotation, audit trail (issue 6). Null until start. */
  observer: HiveObserver | null = null;
  /** The miner and the reflector (DESIGN §6), supervised like the router. */
  readonly memory: MemoryActors;

  constructor(
    readonly config: HiveConfig,
    private readonly observe: ObserveOptions = {},
    private readonly testing: TestSeams = {},
  ) {
    this.root = config.root;
    this.notices = new GodNotices(this.root, (senders) => this.kickRouter(senders));
    this.memory = new MemoryActors(config, config.supervisor.restart, this.events, (kind) => ({
      onCrashed: (info) => this.onHostCrashed(kind, info),
      onRestarted: (info) => {
        appendEvent(this.root, { type: 'actor.restarted', host: kind, restarts: info.restarts, thread: info.threadId });
        this.observer?.restarted(kind);
        this.events.emit('restarted', { host: kind, agents: [], restarts: info.restarts, threadId: info.threadId });
      },
      onFailed: (info) => void this.onHostFailed(kind, info),
    }));
  }

  // ---- lifecycle ---------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.started) throw new HiveError('E_STOPPED', 'This hive was already started; create a new one');
    this.started = true;
    useGroupModes(this.config.permissions === 'group');
    // This thread writes too (sends, notices): a plant or a slow disk applies here as well.
    // A crash point never does: it would stop the caller's own thread.
    const { crashAt: _workersOnly, ...here } = this.testing;
    if (here.plant || here.fsyncDelayMs) installSeams(here, this.root);
    const phases: Record<string, number> = {};
    let mark = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phases[name] = Math.round(now - mark);
      mark = now;
    };
    this.lock = await acquireHiveLock(this.root, {
      onCompromised: (err) => appendEvent(this.root, { type: 'hive.lock-compromised', error: err.message }),
    });
    phase('lock');
    try {
      await ensureHive(this.root);
      const openMode = secureHiveRoot(this.root);
      if (openMode !== null) appendEvent(this.root, { type: 'hive.permissions', from: `0${openMode.toString(8)}`, to: `0${hiveModes().dir.toString(8)}` });
      const before = readRegistry(this.root);
      await ensureAgents(
        this.root,
        this.config.agents.map((a) => ({ id: a.id, name: a.name ?? a.id, role: a.role ?? 'agent', brain: a.brain, ...(a.turnTimeoutMs ? { turnTimeoutMs: a.turnTimeoutMs } : {}) })),
        'config',
      );
      for (const a of this.config.agents) await this.noticeProviderSwitch(a.id, before.agents[a.id]?.brain, a.brain);
      await this.archiveRemovedAgents();
      phase('ensure');
      this.sweepOrphans();
      phase('orphans');
      this.observer = await HiveObserver.start(this.config, this.observe, () =>
        this.status().flatMap((s) => (s.kind === 'agent' || s.kind === 'passive' ? [{ agent: s.id, depth: s.inboxDepth }] : [])),
      );
      this.events.on('condensed', (r) => r.status === 'condensed' && this.observer?.note(`condensed memory of ${r.agent}`));
      phase('observer');
      await applyArchiveCap(this.root, this.config.sessions.archiveEntries);
      sweepOrphanSessions(this.root);
      phase('sweep');
      const registry = readRegistry(this.root);
      const hostOf = new Map(this.config.agents.map((a) => [a.id, a.host]));
      for (const entry of Object.values(registry.agents)) {
        const parsed = BrainSchema.safeParse(entry.brain);
        if (!parsed.success) {
          appendEvent(this.root, { type: 'actor.skipped', agent: entry.id, error: `registry brain invalid: ${parsed.error.message}` });
          continue;
        }
        this.agents.set(entry.id, {
          entry,
          brain: parsed.data,
          hostId: null,
          value: 'stopped',
          handled: 0,
          cursor: committedCursor(this.root, entry.id),
          conversation: null,
          turnClock: new TurnClock(),
        });
      }
      const runnable = [...this.agents.values()].filter((r) => this.isRunnable(r.entry, r.brain));
      for (const r of runnable) {
        const hostId = hostIdFor({ id: r.entry.id, host: hostOf.get(r.entry.id) }, this.config.supervisor.agentsPerWorker, this.members);
        r.hostId = hostId;
        this.members.set(hostId, [...(this.members.get(hostId) ?? []), r.entry.id]);
      }
      phase('plan');
      // The router's worker boots alongside the agents' (~0.1 s of a cold start); it
      // routes only once every actor is restored and its inbox replayed (DESIGN §5).
      const routerBooting = this.routerWorker();
      routerBooting.catch(() => undefined); // its start (or close) takes the error
      try {
        await Promise.all([...this.members.keys()].map((hostId) => this.startHost(hostId)));
      } catch (err) {
        void routerBooting.then((h) => h.terminate(), () => undefined);
        throw err;
      }
      phase('hosts');
      this.watchdog.start(watchdogInterval([this.config.supervisor.turnTimeoutMs, ...[...this.agents.values()].map((r) => this.turnLimitOf(r))]));
      await this.startRouter(routerBooting);
      phase('router');
      // Memory actors start now but do not hold up `ready` (routing does not need them).
      this.memory.start();
      this.sendKickoff();
      this.control = await startControlServer(this.root, this);
      this.hooks = await startHooksServer(this.root, {
        maxLineBytes: this.config.hooks.maxLineBytes,
        deny: this.config.hooks.deny,
        transcriptLines: this.config.sessions.transcriptLines,
        isPassive: (id) => {
          const r = this.agents.get(id);
          return !r || PASSIVE_KINDS.has(r.brain.kind);
        },
        onAck: (id, cursor) => {
          const r = this.agents.get(id);
          if (r) r.cursor = cursor;
        },
      });
      phase('sockets');
      appendEvent(this.root, { type: 'hive.started', agents: runnable.length, pid: process.pid, phases_ms: phases });
      this.observer.started();
      this.events.emit('ready', { root: this.root, agents: runnable.length });
    } catch (err) {
      await this.close().catch(() => undefined);
      throw err;
    }
  }

  /** Graceful stop: routing stops, each actor finishes (or abandons) its turn, the lock is released. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.watchdog.stop();
    await this.control?.close();
    await this.hooks?.close();
    await this.router?.stop();
    await Promise.all([...this.hosts.values()].map((h) => h.stop()));
    await this.memory.stop();
    this.notices.close();
    appendEvent(this.root, { type: 'hive.stopped', pid: process.pid });
    await this.observer?.close();
    await this.lock?.release();
    this.lock = null;
  }

  // ---- public operations ---------------------------------------------------------------

  /** Spawns an agent at runtime; recorded in registry.json so it comes back after a restart. */
  async spawn(input: unknown): Promise<RegistryEntry> {
    const parsed = AgentConfigSchema.safeParse(input);
    if (!parsed.success) {
      throw new HiveError('E_BAD_CONFIG', `Invalid agent spec: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(spec)'}: ${i.message}`).join('; ')}`);
    }
    const spec: AgentConfig = parsed.data;
    const brain = spec.brain.kind === 'module' ? { ...spec.brain, module: path.resolve(this.config.configDir, spec.brain.module) } : spec.brain;
    const existing = this.agents.get(spec.id);
    if (existing?.hostId && this.hosts.get(existing.hostId)?.state() === 'running') {
      throw new HiveError('E_BAD_CONFIG', `Agent "${spec.id}" is already running`);
    }
    const previousBrain = readRegistry(this.root).agents[spec.id]?.brain;
    // Noted before the files are written as well as after: an audit commit already running
    // may pick the new files up, and it must carry the reason (noted during its `git add`).
    this.observer?.note(`spawned ${spec.id}`);
    const entry = await ensureAgent(
      this.root,
      { id: spec.id, name: spec.name ?? spec.id, role: spec.role ?? 'agent', brain, ...(spec.turnTimeoutMs ? { turnTimeoutMs: spec.turnTimeoutMs } : {}) },
      'runtime',
    );
    await this.noticeProviderSwitch(spec.id, previousBrain, brain);
    await updateRegistry(this.root, (r) => {
      r.agents[spec.id]!.status = 'active';
    });
    entry.status = 'active';
    const record: AgentRecord = {
      entry,
      brain,
      hostId: null,
      value: 'starting',
      handled: 0,
      cursor: committedCursor(this.root, spec.id),
      conversation: null,
      turnClock: existing?.turnClock ?? new TurnClock(),
    };
    this.agents.set(spec.id, record);
    appendEvent(this.root, { type: 'actor.spawned', agent: spec.id, brain: brain.kind });
    this.observer?.note(`spawned ${spec.id}`);
    if (!this.isRunnable(entry, brain)) return entry;
    const hostId = hostIdFor({ id: spec.id, host: spec.host }, this.config.supervisor.agentsPerWorker, this.members);
    record.hostId = hostId;
    this.members.set(hostId, [...(this.members.get(hostId) ?? []), spec.id]);
    const host = this.hosts.get(hostId);
    if (host?.handle) {
      const hosted = await this.hostedSpec(spec.id);
      await host.handle.call(async (api) => api.startActors([hosted]));
      await this.routerHandle?.call(async (api) => api.updateHost(hostId, this.members.get(hostId) ?? []));
    } else await this.startHost(hostId);
    this.events.emit('spawned', { agent: spec.id, host: hostId });
    return entry;
  }

  /** Stops an agent's actor and marks it stopped (it stays stopped across restarts). */
  async stop(id: string): Promise<void> {
    const record = this.agents.get(id);
    if (!record) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${this.root}`);
    await updateRegistry(this.root, (r) => {
      if (r.agents[id]) r.agents[id]!.status = 'stopped';
    });
    record.entry.status = 'stopped';
    const hostId = record.hostId;
    record.hostId = null;
    if (hostId) {
      const members = (this.members.get(hostId) ?? []).filter((m) => m !== id);
      const host = this.hosts.get(hostId);
      if (members.length === 0) {
        this.members.delete(hostId);
        this.hosts.delete(hostId);
        await host?.stop();
      } else {
        this.members.set(hostId, members);
        await host?.handle?.call((api) => api.stopActor(id, this.config.supervisor.stopGraceMs));
      }
    }
    record.value = 'stopped';
    appendEvent(this.root, { type: 'actor.stopped', agent: id });
    this.observer?.note(`stopped ${id}`);
    this.events.emit('stopped', { agent: id });
  }

  /** Validates and durably writes a message into its sender's outbox, then wakes the router. */
  async send(input: HiveMessageInput): Promise<HiveMessage> {
    const r = parseMessage(input);
    if (!r.ok) throw r.error;
    if (!fs.existsSync(agentPaths(this.root, r.message.from).dir)) {
      throw new HiveError('E_UNKNOWN_AGENT', `Sender "${r.message.from}" is not an agent of ${this.root}`);
    }
    const { message, span } = startSend(this.observer?.tracer ?? null, r.message);
    writeOutbox(this.root, [message]);
    span?.end();
    this.kickRouter([message.from]);
    return message;
  }

  /** Open (or all) questions for the people in the loop. */
  questions(options: { open?: boolean } = {}): Question[] {
    return listQuestions(this.root, options);
  }

  /** Answers a question; the router delivers it to the asker at once. */
  answer(questionId: string, body: string, options: { again?: boolean } = {}): HiveMessage {
    const reply = answerQuestion(this.root, questionId, body, options);
    this.kickRouter([reply.from]);
    return reply;
  }

  /**
   * Runs a session operation on an agent with its actor paused, so no turn writes the
   * session files meanwhile (clear, archive, reopen, switch).
   */
  async withAgentPaused<T>(agentId: string, fn: () => Promise<T> | T): Promise<T> {
    const record = this.agents.get(agentId);
    if (!record) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${agentId}" in ${this.root}`);
    const host = record.hostId ? this.hosts.get(record.hostId) : undefined;
    const handle = host?.handle;
    if (!handle) return fn();
    await handle.call((api) => api.stopActor(agentId, this.config.supervisor.stopGraceMs));
    try {
      return await fn();
    } finally {
      const spec = await this.hostedSpec(agentId);
      await handle.call((api) => api.startActors([spec])).catch((err) => appendEvent(this.root, { type: 'actor.resume-failed', agent: agentId, error: errorMessage(err) }));
    }
  }

  status(): ActorStatus[] {
    const rows: ActorStatus[] = [];
    rows.push({
      id: 'router',
      kind: 'router',
      brain: '-',
      host: ROUTER_HOST,
      state: this.routerValue,
      status: withPause(this.router?.state() ?? 'stopped', this.routerPaused),
      restarts: this.router?.restarts() ?? 0,
      inboxDepth: 0,
      cursor: 0,
      handled: 0,
      threadId: this.router?.handle?.threadId ?? null,
      conversation: null,
      busyMs: null,
    });
    rows.push(...this.memory.status());
    for (const r of [...this.agents.values()].sort((a, b) => a.entry.id.localeCompare(b.entry.id))) {
      const host = r.hostId ? this.hosts.get(r.hostId) : undefined;
      const cursor = host ? r.cursor : committedCursor(this.root, r.entry.id);
      // A turn stamped in the shared clock is running, whatever the last report said: a
      // brain looping on the CPU never lets its thread report 'thinking'.
      const started = r.hostId && this.workers.has(r.hostId) ? r.turnClock.startedAt() : null;
      rows.push({
        id: r.entry.id,
        kind: PASSIVE_KINDS.has(r.brain.kind) ? 'passive' : 'agent',
        brain: r.brain.kind,
        host: r.hostId,
        state: host ? (started !== null ? 'thinking' : r.value) : PASSIVE_KINDS.has(r.brain.kind) ? 'waiting' : 'stopped',
        status: host ? withPause(host.state(), r.paused ?? null) : r.entry.status,
        restarts: host?.restarts() ?? 0,
        inboxDepth: safeDepth(this.root, r.entry.id, cursor),
        cursor,
        handled: r.handled,
        threadId: host?.handle?.threadId ?? null,
        conversation: r.conversation,
        busyMs: started !== null ? Math.max(0, Date.now() - started) : null,
      });
    }
    return rows;
  }

  /** Worker hosts with their supervised-child machine state (inspector). */
  hostStatus(): { id: string; value: string; restarts: number; agents: string[]; threadId: number | null }[] {
    const rows = this.router ? [{ id: ROUTER_HOST, child: this.router as HostChild<unknown>, agents: [] as string[] }] : [];
    for (const [id, child] of this.hosts) rows.push({ id, child: child as HostChild<unknown>, agents: this.members.get(id) ?? [] });
    return rows.map((r) => ({ id: r.id, value: r.child.state(), restarts: r.child.restarts(), agents: r.agents, threadId: r.child.handle?.threadId ?? null }));
  }

  /** The latest context each agent reported (coalesced by the agent; inspector). */
  contexts(): Record<string, ActorContextSummary> {
    const out: Record<string, ActorContextSummary> = {};
    for (const [id, r] of this.agents) if (r.context) out[id] = r.context;
    return out;
  }

  /** Runtime objects for tests and tools: the worker thread of an agent's host. */
  threadOf(agentId: string): number | null {
    const hostId = this.agents.get(agentId)?.hostId;
    if (!hostId) return null;
    return this.hosts.get(hostId)?.handle?.threadId ?? null;
  }

  /** Terminates the worker hosting an agent, as a crash would (chaos, tests). */
  async crashHostOf(agentId: string): Promise<void> {
    const hostId = this.agents.get(agentId)?.hostId;
    const handle = hostId ? this.hosts.get(hostId)?.handle : null;
    if (handle) await handle.worker.terminate();
  }

  /** Tells the router that these senders' outboxes changed (all of them when omitted). */
  kickRouter(senders?: string[]): void {
    void this.router?.handle?.call(async (api) => api.kick(senders)).catch(() => undefined);
  }

  // ---- internals -----------------------------------------------------------------------

  /**
   * An agent that came from the config and is no longer in it is archived: it does not run,
   * takes no part in broadcasts, and its live conversation goes to sessions.json (its
   * folder, memory and queues stay; putting it back in the config makes it active again).
   */
  private async archiveRemovedAgents(): Promise<void> {
    const inConfig = new Set(this.config.agents.map((a) => a.id));
    const removed = Object.values(readRegistry(this.root).agents).filter((e) => e.origin === 'config' && e.status !== 'archived' && !inConfig.has(e.id));
    // Conversation first, then the registry: a crash in between archives again next start
    // (the new live session is empty, so nothing is archived twice).
    for (const e of removed) {
      const session = await archiveSession(this.root, e.id, 'agent removed from the config', this.config.sessions.archiveEntries);
      await updateRegistry(this.root, (r) => {
        if (r.agents[e.id]) r.agents[e.id]!.status = 'archived';
      });
      appendEvent(this.root, { type: 'agent.archived', agent: e.id, reason: 'removed from the config', session: session?.key ?? null });
    }
  }

  private isRunnable(entry: RegistryEntry, brain: BrainSpec): boolean {
    return (entry.status === 'active' || entry.status === 'failed') && !PASSIVE_KINDS.has(brain.kind) && !RESERVED_IDS.has(entry.id);
  }

  private agentSettings(): AgentSettings {
    const s = this.config.supervisor;
    return {
      turnBatch: s.turnBatch,
      brainRetries: s.brainRetries,
      sessionCaps: this.config.sessions,
      poisonAfter: s.poisonAfter,
      doneCap: s.doneCap,
      inboxPollMs: s.inboxPollMs,
      gapWaitMs: 2_000,
    };
  }

  private async hostedSpec(id: string): Promise<HostedAgentSpec> {
    const r = this.agents.get(id)!;
    const spec: HostedAgentSpec = { id, name: r.entry.name, role: r.entry.role, brain: r.brain, turnClock: r.turnClock.buffer };
    if (r.forgive) spec.forgiveCrash = true;
    r.forgive = false;
    if (r.brain.kind === 'module') spec.moduleUrl = await moduleBrainUrl(r.brain.module);
    if (r.brain.kind === 'command' || r.brain.kind === 'openai') spec.turnBatch = 1;
    return spec;
  }

  private async startHost(hostId: string): Promise<void> {
    const child = new HostChild<AgentHostApi>(hostId, this.config.supervisor.restart, {
      start: async () => {
        // A turn the previous thread died in is over: the new thread stamps its own.
        for (const id of this.members.get(hostId) ?? []) this.agents.get(id)?.turnClock.clear();
        const specs = await Promise.all((this.members.get(hostId) ?? []).map((id) => this.hostedSpec(id)));
        const telemetry = this.observer?.workerTelemetry(hostId, this.members.get(hostId) ?? []);
        const handle = await WorkerHandle.start<AgentHostApi>(
          'agent-host',
          { hostId, root: this.root, agentSettings: this.agentSettings(), ...(telemetry ? { telemetry } : {}), ...this.testingInit() },
          (e) => this.onWorkerEvent(e),
          { heapMb: workerHeapLimitMb(this.config.supervisor.workerHeapMb, (this.members.get(hostId) ?? []).length) },
        );
        // Watched from here: a brain can run away while its actor is still being started.
        this.workers.set(hostId, handle);
        void handle.exited.then(() => this.workers.get(hostId) === handle && this.workers.delete(hostId));
        // Linked first: once its actors start, a brain may keep the thread from answering.
        await this.linkToRouter(hostId, handle);
        try {
          await handle.call((api) => api.startActors(specs));
        } catch (err) {
          await handle.terminate();
          throw err;
        }
        return handle;
      },
      drain: async (handle) => {
        const grace = this.config.supervisor.stopGraceMs;
        await drainWithin(handle.call((api) => api.stopAll(grace)), grace + 500 + this.flushBudgetMs());
      },
      onCrashed: (info) => this.onHostCrashed(hostId, info),
      onRestarted: (info) => {
        const agents = this.members.get(hostId) ?? [];
        appendEvent(this.root, { type: 'actor.restarted', host: hostId, agents, restarts: info.restarts, thread: info.threadId });
        this.observer?.restarted(hostId);
        this.events.emit('restarted', { host: hostId, agents, restarts: info.restarts, threadId: info.threadId });
      },
      onFailed: (info) => void this.onHostFailed(hostId, info),
    });
    this.hosts.set(hostId, child);
    await child.start();
  }

  /**
   * Extra time a stopping worker gets to flush its spans when telemetry is on (an OTLP
   * export is an HTTP request, 10 s timeout by default); terminating earlier loses them.
   */
  private flushBudgetMs(): number {
    return this.observer?.tracer ? 10_000 : 0;
  }

  /** A router worker, booted but not routing (its `start()` begins that). */
  private routerWorker(): Promise<WorkerHandle<RouterHostApi>> {
    const r = this.config.router;
    const telemetry = this.observer?.workerTelemetry(ROUTER_HOST, []);
    return WorkerHandle.start<RouterHostApi>(
      'router-host',
      {
        hostId: ROUTER_HOST,
        root: this.root,
        routerSettings: { pollMs: r.pollMs, hopCap: r.hopCap, batchPerSender: r.batchPerSender, sentCap: r.sentCap, doneCap: this.config.supervisor.doneCap, watch: true },
        ...(telemetry ? { telemetry } : {}),
        ...this.testingInit(),
      },
      (e) => this.onWorkerEvent(e),
    );
  }

  /** What a worker's init carries for a test (src/testing/seams.ts). */
  private testingInit(): Pick<WorkerInit, 'seams'> {
    return Object.keys(this.testing).length > 0 ? { seams: this.testing } : {};
  }

  /** The running turns the deadline watches: agents whose worker thread is alive. */
  private *watchedTurns(): Iterable<WatchedTurn> {
    for (const r of this.agents.values()) {
      const handle = r.hostId ? this.workers.get(r.hostId) : undefined;
      if (!handle) continue;
      yield {
        agent: r.entry.id,
        clock: r.turnClock,
        limitMs: this.turnLimitOf(r),
        kill: (reason) => {
          appendEvent(this.root, { type: 'actor.deadline', agent: r.entry.id, host: r.hostId, error: reason });
          // Its pool mates die with it through no fault of theirs.
          for (const id of this.members.get(r.hostId!) ?? []) if (id !== r.entry.id) this.agents.get(id)!.forgive = true;
          void handle.kill(reason);
        },
      };
    }
  }

  private turnLimitOf(r: AgentRecord): number {
    return r.entry.turnTimeoutMs ?? this.config.supervisor.turnTimeoutMs;
  }

  /**
   * Starts routing. `booted`: a router worker started earlier (while the agents were
   * restored), used for the first start; restarts boot their own.
   */
  private async startRouter(booted: Promise<WorkerHandle<RouterHostApi>> | null): Promise<void> {
    let first = booted;
    this.router = new HostChild<RouterHostApi>(ROUTER_HOST, this.config.supervisor.restart, {
      start: async () => {
        const pending = first;
        first = null;
        const handle = await (pending ?? this.routerWorker());
        try {
          await handle.call((api) => api.start());
        } catch (err) {
          await handle.terminate();
          throw err;
        }
        this.routerHandle = handle;
        await Promise.all([...this.hosts].map(([hostId, host]) => (host.handle ? this.linkToRouter(hostId, host.handle) : undefined)));
        return handle;
      },
      drain: async (handle) => {
        await drainWithin(handle.call((api) => api.stop()), 5_000 + this.flushBudgetMs());
      },
      onCrashed: (info) => this.onHostCrashed(ROUTER_HOST, info),
      onRestarted: (info) => {
        this.routerPaused = null; // a new thread: nothing waits yet
        appendEvent(this.root, { type: 'actor.restarted', host: ROUTER_HOST, restarts: info.restarts, thread: info.threadId });
        this.observer?.restarted(ROUTER_HOST);
        this.events.emit('restarted', { host: ROUTER_HOST, agents: [], restarts: info.restarts, threadId: info.threadId });
      },
      onFailed: (info) => void this.onHostFailed(ROUTER_HOST, info),
    });
    await this.router.start();
  }

  /** Gives the router and an agent host a direct channel (wake-ups and kicks skip main). */
  private async linkToRouter(hostId: string, host: WorkerHandle<AgentHostApi>): Promise<void> {
    const router = this.routerHandle;
    if (!router) return;
    const { port1, port2 } = new MessageChannel();
    try {
      await router.call(async (api) => api.attachHost(hostId, this.members.get(hostId) ?? [], Comlink.transfer(port1, [port1])));
      await host.call(async (api) => api.attachRouter(Comlink.transfer(port2, [port2])));
    } catch (err) {
      appendEvent(this.root, { type: 'hive.link-failed', host: hostId, error: errorMessage(err) });
    }
  }

  private onHostCrashed(hostId: string, info: { error: string; restarts: number; delayMs: number }): void {
    if (this.closing) return;
    const agents = this.members.get(hostId) ?? [];
    appendEvent(this.root, { type: 'actor.crashed', host: hostId, agents, error: info.error, restarts: info.restarts, backoff_ms: info.delayMs });
    this.events.emit('crashed', { host: hostId, agents, ...info });
  }

  private async onHostFailed(hostId: string, info: { error: string; restarts: number }): Promise<void> {
    if (this.closing) return;
    const agents = this.members.get(hostId) ?? [];
    appendEvent(this.root, { type: 'actor.failed', host: hostId, agents, error: info.error, restarts: info.restarts });
    await updateRegistry(this.root, (r) => {
      for (const id of agents) if (r.agents[id]) r.agents[id]!.status = 'failed';
    }).catch(() => undefined);
    for (const id of agents) {
      const rec = this.agents.get(id);
      if (rec) rec.entry.status = 'failed';
    }
    this.observer?.note(`${hostId} failed`);
    const what = agents.length > 0 ? `agent(s) ${agents.join(', ')}` : hostId;
    const notice = godNotice(
      'failed',
      `${hostId}/${Date.now()}`,
      `${what} failed`,
      `The worker of ${what} crashed ${info.restarts + 1} times within ${this.config.supervisor.restart.withinMs} ms and was not restarted. ` +
        `Last error: ${info.error}. The rest of the hive keeps running; fix the cause and spawn it again.`,
    );
    this.notices.post(notice);
    this.events.emit('failed', { host: hostId, agents, ...info });
  }

  private onWorkerEvent(e: WorkerEvent): void {
    this.observer?.onWorkerEvent(e);
    switch (e.type) {
      case 'actor.context': {
        const r = this.agents.get(e.agent);
        if (r) r.context = e.context;
        break;
      }
      case 'router.delivered':
        for (const d of e.deliveries) {
          this.queueWake(d.agent);
          this.events.emit('delivered', d);
        }
        break;
      case 'router.rejected':
        for (const item of e.items) {
          this.events.emit('dead-lettered', { source: `agents/${item.sender}/outbox/${item.ref}`, error: item.error, ...(item.code ? { code: item.code } : {}), agent: item.sender });
        }
        break;
      case 'router.state':
        this.routerValue = e.value;
        this.events.emit('state', { actor: 'router', value: e.value });
        break;
      case 'outbox.written':
        this.kickRouter([e.agent]);
        break;
      case 'actor.state': {
        const r = this.agents.get(e.agent);
        if (r) {
          r.value = e.value;
          r.cursor = e.cursor;
          r.handled = e.handled;
        }
        this.events.emit('state', { actor: e.agent, value: e.value });
        break;
      }
      case 'actor.started': {
        const r = this.agents.get(e.agent);
        if (r) {
          r.paused = null; // a new thread: nothing waits yet
          r.value = e.info.value;
          r.cursor = e.info.cursor;
          r.handled = e.info.handled;
          r.conversation = e.info.conversation;
        }
        break;
      }
      case 'actor.processed':
        this.events.emit('processed', { agent: e.agent, cursor: e.cursor, handled: e.handled, sent: e.sent, timings: e.timings });
        break;
      case 'actor.paused':
      case 'actor.resumed': {
        const reason = e.type === 'actor.paused' ? e.reason : null;
        if (e.agent === ROUTER_HOST) this.routerPaused = reason;
        else {
          const r = this.agents.get(e.agent);
          if (r) r.paused = reason;
        }
        if (e.type === 'actor.paused') this.events.emit('paused', { actor: e.agent, reason: e.reason, error: e.error });
        else this.events.emit('resumed', { actor: e.agent, pausedMs: e.pausedMs });
        break;
      }
      case 'actor.poisoned':
        this.events.emit('dead-lettered', { source: `agents/${e.agent}/inbox`, error: `poison message ${e.id} (${e.attempts} crashes)`, code: 'E_POISON', agent: e.agent });
        break;
      default:
        break;
    }
  }

  /** Coalesces wake-ups per host into one call per tick. */
  private queueWake(agentId: string): void {
    const hostId = this.agents.get(agentId)?.hostId;
    if (!hostId) return;
    let set = this.wakeQueue.get(hostId);
    if (!set) {
      set = new Set();
      this.wakeQueue.set(hostId, set);
    }
    set.add(agentId);
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    queueMicrotask(() => {
      this.wakeScheduled = false;
      const queue = this.wakeQueue;
      this.wakeQueue = new Map();
      for (const [hostId, ids] of queue) {
        void this.hosts.get(hostId)?.handle?.call(async (api) => api.wake([...ids])).catch(() => undefined);
      }
    });
  }

  private sendKickoff(): void {
    if (this.config.kickoff.length === 0) return;
    const file = path.join(hivePaths(this.root).root, 'kickoff.json');
    const done = new Set(readJsonFile<string[]>(file) ?? []);
    const fresh: HiveMessage[] = [];
    this.config.kickoff.forEach((k, i) => {
      const id = stableId('kickoff', JSON.stringify(k), String(i));
      if (done.has(id)) return;
      fresh.push(createMessage({ ...k, id }));
      done.add(id);
    });
    if (fresh.length === 0) return;
    writeOutbox(this.root, fresh);
    writeJsonAtomic(file, [...done]);
    this.kickRouter([...new Set(fresh.map((m) => m.from))]);
  }

  /**
   * A provider or model switch: the old conversation is archived (a different model
   * mid-history is a different conversation) and god is offered both ways forward:
   * keep memory (`hive switch AGENT --keep`, the history re-imported verbatim) or a
   * snapshot (`hive switch AGENT --snapshot NAME`).
   */
  private async noticeProviderSwitch(agentId: string, before: unknown, after: BrainSpec): Promise<void> {
    if (before === undefined || brainIdentity(before) === brainIdentity(after)) return;
    const archived = await archiveSession(this.root, agentId, 'provider switch', this.config.sessions.archiveEntries);
    if (!archived) return;
    writeSwitchOffer(this.root, agentId, { from: brainIdentity(before), to: brainIdentity(after), archived: archived.key });
    const notice = godNotice(
      'switch',
      `${agentId}/${archived.key}`,
      `${agentId} switched provider`,
      `Agent ${agentId} now runs ${brainIdentity(after)} (was ${brainIdentity(before)}); its conversation (${archived.turns} turns) was archived as ${archived.key}.\n` +
        `Keep memory: hive switch ${agentId} --keep   (the history is re-imported verbatim)\n` +
        `Snapshot:    hive switch ${agentId} --snapshot NAME   (a recap is armed as background)`,
    );
    this.notices.post(notice);
    appendEvent(this.root, { type: 'session.switch-offered', agent: agentId, from: brainIdentity(before), to: brainIdentity(after), archived: archived.key });
  }

  /** Startup sweep: temp files left by a crash, in every folder Hive writes atomically. */
  private sweepOrphans(): void {
    const p = hivePaths(this.root);
    const swept: string[] = [];
    for (const dir of [p.root, p.deadLetter]) swept.push(...sweepTempFiles(dir));
    swept.push(...sweepDeadIntents(p.root)); // hive.lock
    for (const id of listDir(p.agents)) {
      try {
        const a = agentPaths(this.root, id);
        for (const dir of [a.dir, a.outbox, a.sent, a.inbox, a.done]) swept.push(...sweepTempFiles(dir));
        for (const dir of [a.dir, a.inbox]) swept.push(...sweepDeadIntents(dir)); // memory.md and inbox locks
      } catch {
        // not an agent folder (bad name): leave it alone
      }
    }
    if (swept.length > 0) appendEvent(this.root, { type: 'hive.swept', files: swept.length });
  }
}

/** A running actor that waits out a shortage shows it in place of `running`: `paused: disk full`. */
function withPause(status: string, paused: string | null): string {
  return paused && status === 'running' ? `paused: ${paused}` : status;
}

function safeDepth(root: string, id: string, cursor: number): number {
  try {
    return inboxDepth(root, id, cursor);
  } catch {
    return 0;
  }
}
