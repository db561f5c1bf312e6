// Long on purpose: start() and close() are one ordered sequence each (lock, recovery, hosts,
// router, sockets, and back), kept side by side so the two orders can be read against each other.
import { GodInboxView } from './god-inbox-view.ts';
import { LeaseKeeper } from './leases.ts';
import { leasedAgents, runsHere } from './cluster.ts';
import fs from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { ActorContextSummary, WorkerEvent, WorkerInit } from '../protocol/worker.ts';
import { AgentConfigSchema, resolveBrainPaths, type AgentConfig, type HiveConfig } from '../config/schema.ts';
import { ensureAgent, ensureAgentsReporting, ensureHive } from '../layout/ensure.ts';
import { agentPaths } from '../layout/paths.ts';
import { acquireHiveLock, type HiveLock } from '../lock/hive-lock.ts';
import { readRegistry, updateRegistry, type RegistryEntry } from '../registry/registry.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { parseMessage, type HiveMessage, type HiveMessageInput } from '../protocol/message.ts';
import { hiveModes, secureHiveRoot, useGroupModes } from '../fs/modes.ts';
import { HiveObserver, type ObserveOptions } from '../telemetry/observer.ts';
import { startSend } from '../telemetry/spans.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { SendLog } from '../queue/send-log.ts';
import { startHooksServer } from '../hooks/server.ts';
import type { JsonLineServer } from '../net/json-line.ts';
import { listQuestions, answerQuestion, type Question } from '../human/questions.ts';
import { applyArchiveCap, sweepOrphanSessions } from '../session/archive.ts';
import { installSeams, type TestSeams } from '../testing/seams.ts';
import { faultOps } from '../testing/fault-ops.ts';
import { HiveEvents } from './events.ts';
import { GodNotices } from './notices.ts';
import { startControlServer, type ControlServer } from './control.ts';
import { MemoryActors } from './memory-actors.ts';
import type { SupervisorContext } from './context.ts';
import { AgentHosts } from './agent-hosts.ts';
import { ROUTER_HOST, RouterChild } from './router-child.ts';
import { relayWorkerEvent } from './worker-events.ts';
import { archiveRemovedAgents, noticeProviderSwitch } from './provider-switch.ts';
import { sendKickoff, sweepOrphans } from './startup.ts';
import { WRITE_BACK_AFTER_MADE, startWriteBack } from './write-back.ts';
import type { ActorStatus, HostStatus } from './status.ts';

export type { ActorStatus, HostStatus } from './status.ts';

/**
 * The supervisor (main thread): owns hive.lock and the hive's life: start (in the restore
 * order of docs/architecture.md, "Start and restore"), the public operations, and close.
 * The parts it runs are in files of their own: the agents and their workers
 * (agent-hosts.ts), the router (router-child.ts), the miner and the reflector
 * (memory-actors.ts), each supervised the same way (supervise.ts).
 */
export class Supervisor {
  readonly events = new HiveEvents();
  readonly root: string;
  /** Telemetry, event-log rotation, audit trail. Null until start. */
  observer: HiveObserver | null = null;
  /** The miner and the reflector, supervised like the router. */
  readonly memory: MemoryActors;
  private readonly ctx: SupervisorContext;
  private readonly router: RouterChild;
  private readonly agents: AgentHosts;
  private lock: HiveLock | null = null;
  /** Where hive.send() writes while this supervisor holds hive.lock (one machine only; null: outbox files). */
  private sendLog: SendLog | null = null;
  private control: ControlServer | null = null;
  private hooks: JsonLineServer | null = null;
  private closing = false;
  private started = false;

  constructor(
    readonly config: HiveConfig,
    private readonly observe: ObserveOptions = {},
    private readonly testing: TestSeams = {},
  ) {
    this.root = config.root;
    this.ctx = {
      root: this.root,
      config,
      events: this.events,
      notices: new GodNotices(this.root, (senders) => this.kickRouter(senders)),
      observer: () => this.observer,
      closing: () => this.closing,
      testingInit: (): Pick<WorkerInit, 'seams'> => (Object.keys(this.testing).length > 0 ? { seams: this.testing } : {}),
    };
    const onEvent = (e: WorkerEvent) => {
      this.observer?.onWorkerEvent(e);
      relayWorkerEvent(e, { agents: this.agents, router: this.router, events: this.events, memory: this.memory });
    };
    this.router = new RouterChild(this.ctx, onEvent, () => this.agents.linkable(), (m) => this.sendDurably(m));
    this.agents = new AgentHosts(this.ctx, this.router, onEvent);
    this.memory = new MemoryActors(this.ctx);
  }

  // ---- lifecycle ---------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.started) throw new HiveError('E_STOPPED', 'This hive was already started; create a new one');
    this.started = true;
    useGroupModes(this.config.permissions === 'group');
    // This thread writes too (sends, notices): a plant or a slow disk applies here as well.
    // A crash point never does: it would stop the caller's own thread.
    const { crashAt: _workersOnly, faultOps: _controlOnly, ...here } = this.testing;
    if (here.plant || here.fsyncDelayMs) installSeams(here, this.root);
    const phases: Record<string, number> = {};
    let mark = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phases[name] = Math.round(now - mark);
      mark = now;
      this.events.emit('starting', { phase: name, ms: phases[name]! });
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
      const { created } = await ensureAgentsReporting(
        this.root,
        this.config.agents.map((a) => ({ id: a.id, name: a.name ?? a.id, role: a.role ?? 'agent', brain: a.brain, ...(a.turnTimeoutMs ? { turnTimeoutMs: a.turnTimeoutMs } : {}) })),
        'config',
        { flushFiles: false }, // derived files of agents every start ensures again
      );
      for (const a of this.config.agents) await noticeProviderSwitch(this.ctx, a.id, before.agents[a.id]?.brain, a.brain);
      await archiveRemovedAgents(this.ctx);
      if (created.size >= WRITE_BACK_AFTER_MADE) startWriteBack(this.root);
      phase('ensure');
      sweepOrphans(this.root, created);
      // One machine: hive.send() writes the send log, recovered before the router starts.
      if (!this.config.cluster) this.sendLog = await SendLog.open(this.root, Object.keys(readRegistry(this.root).agents));
      phase('orphans');
      this.observer = await HiveObserver.start(this.config, this.observe, () =>
        this.status().flatMap((s) => (s.kind === 'agent' || s.kind === 'passive' ? [{ agent: s.id, depth: s.inboxDepth }] : [])),
      );
      this.events.on('condensed', (r) => r.status === 'condensed' && this.observer?.note(`condensed memory of ${r.agent}`));
      phase('observer');
      await applyArchiveCap(this.root, this.config.sessions.archiveEntries);
      sweepOrphanSessions(this.root, created);
      phase('sweep');
      this.agents.load(Object.values(readRegistry(this.root).agents), created);
      // The router's worker boots alongside the agents' (a part of every cold start); it
      // routes only once every actor is restored and its inbox replayed.
      const routerBooting = this.router.boot();
      routerBooting.catch(() => undefined); // its start (or close) takes the error
      let running: number;
      try {
        // In cluster mode only the agents pinned to this machine start here (src/supervisor/cluster.ts).
        const started = await this.agents.startAll(new Map(this.config.agents.map((a) => [a.id, a.host])), (id) => runsHere(this.config, id));
        running = started.running;
        // A mistake in the config is reported by start() (the hive does not run with it);
        // an agent spawned at run time whose brain is gone is only marked failed.
        const inConfig = new Set(this.config.agents.map((a) => a.id));
        const mistakes = started.failed.filter((f) => inConfig.has(f.agent));
        if (mistakes.length > 0) throw new HiveError('E_BAD_CONFIG', `${mistakes.map((f) => f.error).join('; ')} (config ${this.config.configFile ?? this.config.configDir})`, { details: { agents: mistakes } });
      } catch (err) {
        void routerBooting.then((h) => h.terminate(), () => undefined);
        throw err;
      }
      phase('hosts');
      this.agents.startWatchdog();
      await this.router.start(routerBooting);
      phase('router');
      // Cluster mode: the unpinned agents run where their lease is held; the ones this
      // machine can take start now, the others when their machine stops renewing.
      const leased = leasedAgents(this.config);
      if (this.config.cluster && leased.length > 0) {
        this.leases = await LeaseKeeper.start(this.config.cluster, leased, {
          acquired: (id) => this.startLeased(id),
          lost: (id) => this.agents.remove(id),
          log: (e) => appendEvent(this.root, e),
        });
        phase('leases');
      }
      if (this.config.cluster) this.godInbox = await GodInboxView.start(this.root);
      // Memory actors start now but do not hold up `ready` (routing does not need them).
      this.memory.start();
      const kicked = sendKickoff(this.root, this.config.kickoff);
      if (kicked.length > 0) this.kickRouter(kicked);
      this.control = await startControlServer(this.root, this, this.testing.faultOps ? faultOps(this) : {});
      this.hooks = await startHooksServer(this.root, {
        maxLineBytes: this.config.hooks.maxLineBytes,
        deny: this.config.hooks.deny,
        transcriptLines: this.config.sessions.transcriptLines,
        isPassive: (id) => this.agents.isPassive(id),
        onAck: (id, cursor) => {
          const r = this.agents.get(id);
          if (r) r.cursor = cursor;
        },
      });
      phase('sockets');
      appendEvent(this.root, { type: 'hive.started', agents: running, pid: process.pid, phases_ms: phases });
      this.observer.started();
      this.events.emit('ready', { root: this.root, agents: running });
    } catch (err) {
      await this.close().catch(() => undefined);
      throw err;
    }
  }

  /** Graceful stop: routing stops, each actor finishes (or abandons) its turn, the lock is released. */
  private leases: LeaseKeeper | null = null;
  private godInbox: GodInboxView | null = null; // cluster mode: god's inbox as JetStream holds it

  /** Cluster mode: this machine took an unpinned agent's lease: it starts here from its last commit. */
  private async startLeased(id: string): Promise<void> {
    const r = this.agents.get(id);
    if (!r) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${this.root}`);
    if (r.hostId) return; // runs here already
    // Stopped here when its lease went elsewhere earlier: it runs again now.
    await this.agents.add(r.entry.status === 'stopped' ? { ...r.entry, status: 'active' } : r.entry, r.brain, undefined);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.control?.close();
    await this.hooks?.close();
    await this.leases?.halt(); // no lease taken while stopping
    await this.router.stop();
    await this.agents.stopAll();
    await this.sendLog?.close(); // waits for the flushes under way
    this.sendLog = null; // sends after the stop are outbox files: the lock is given up below
    await this.leases?.stop(); // given back once the agents are stopped: another machine takes them at once
    this.godInbox?.close();
    await this.memory.stop();
    this.ctx.notices.close();
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
    const brain = resolveBrainPaths(spec.brain, this.config.configDir);
    if (this.agents.isRunning(spec.id)) throw new HiveError('E_BAD_CONFIG', `Agent "${spec.id}" is already running`);
    const previousBrain = readRegistry(this.root).agents[spec.id]?.brain;
    // Noted before the files are written as well as after: an audit commit already running
    // may pick the new files up, and it must carry the reason (noted during its `git add`).
    this.observer?.note(`spawned ${spec.id}`);
    const entry = await ensureAgent(
      this.root,
      { id: spec.id, name: spec.name ?? spec.id, role: spec.role ?? 'agent', brain, ...(spec.turnTimeoutMs ? { turnTimeoutMs: spec.turnTimeoutMs } : {}) },
      'runtime',
    );
    await noticeProviderSwitch(this.ctx, spec.id, previousBrain, brain);
    await updateRegistry(this.root, (r) => {
      r.agents[spec.id]!.status = 'active';
    });
    entry.status = 'active';
    appendEvent(this.root, { type: 'actor.spawned', agent: spec.id, brain: brain.kind });
    this.observer?.note(`spawned ${spec.id}`);
    await this.agents.add(entry, brain, spec.host);
    return entry;
  }

  /** Stops an agent's actor and marks it stopped (it stays stopped across restarts). */
  async stop(id: string): Promise<void> {
    if (!this.agents.get(id)) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${this.root}`);
    await updateRegistry(this.root, (r) => {
      if (r.agents[id]) r.agents[id]!.status = 'stopped';
    });
    await this.agents.remove(id);
    appendEvent(this.root, { type: 'actor.stopped', agent: id });
    this.observer?.note(`stopped ${id}`);
    this.events.emit('stopped', { agent: id });
  }

  /**
   * Validates a message and hands it on: straight to the router while it runs (resolves once
   * every recipient's inbox holds it durably, src/router/ingress.ts), else durably into the
   * send log (an outbox file in cluster mode or after the stop), then wakes the router.
   */
  async send(input: HiveMessageInput): Promise<HiveMessage> {
    const r = parseMessage(input);
    if (!r.ok) throw r.error;
    // The router and the send log's writer check the sender's folder (E_UNKNOWN_AGENT): a
    // stat here per send is for the outbox-file path only.
    if (!this.sendLog?.open && !fs.existsSync(agentPaths(this.root, r.message.from).dir)) {
      throw new HiveError('E_UNKNOWN_AGENT', `Sender "${r.message.from}" is not an agent of ${this.root}`);
    }
    const { message, span } = startSend(this.observer?.tracer ?? null, r.message);
    await (this.sendLog ? this.router.send(message) : this.sendDurably(message));
    span?.end();
    return message;
  }

  /** A send made durable without the router: the send log (an outbox file in cluster mode or after the stop), then a kick. */
  private async sendDurably(message: HiveMessage): Promise<void> {
    await (this.sendLog ? this.sendLog.send(message) : writeOutbox(this.root, [message]));
    this.kickRouter([message.from]);
  }

  /** Open (or all) questions for the people in the loop. */
  questions(options: { open?: boolean } = {}): Question[] {
    return listQuestions(this.root, { ...options, ...(this.godInbox ? { inbox: this.godInbox.current() } : {}) });
  }

  /** Answers a question; the router delivers it to the asker at once. */
  answer(questionId: string, body: string, options: { again?: boolean } = {}): HiveMessage {
    const reply = answerQuestion(this.root, questionId, body, { ...options, ...(this.godInbox ? { inbox: this.godInbox.current() } : {}) });
    this.kickRouter([reply.from]);
    return reply;
  }

  /**
   * Runs a session operation on an agent with its actor paused, so no turn writes the
   * session files meanwhile (clear, archive, reopen, switch).
   */
  withAgentPaused<T>(agentId: string, fn: () => Promise<T> | T): Promise<T> {
    return this.agents.withPaused(agentId, fn);
  }

  /** The agents that `status()` lists as kind 'agent', counted without reading their inboxes. */
  agentCount(): number {
    return this.agents.agentCount();
  }

  status(): ActorStatus[] {
    return [this.router.statusRow(), ...this.memory.status(), ...this.agents.statusRows()];
  }

  /** Worker hosts with their supervised-child machine state (inspector). */
  hostStatus(): HostStatus[] {
    const router = this.router.supervised();
    const routerRow = router ? [{ id: ROUTER_HOST, value: router.state(), restarts: router.restarts(), agents: [], threadId: router.handle?.threadId ?? null }] : [];
    return [...routerRow, ...this.agents.hostRows()];
  }

  /** The latest context each agent reported (coalesced by the agent; inspector). */
  contexts(): Record<string, ActorContextSummary> {
    return this.agents.contexts();
  }

  /** The worker thread id hosting an agent, or null (tests and tools). */
  threadOf(agentId: string): number | null {
    return this.agents.workerOf(agentId)?.threadId ?? null;
  }

  /** The worker hosting an agent, or null: what `hive chaos` and tests end to make a crash. */
  workerOf(agentId: string): Worker | null {
    return this.agents.workerOf(agentId)?.worker ?? null;
  }

  /** The router's worker, or null (between incarnations): what `hive chaos` and tests end to make it crash. */
  routerWorker(): Worker | null {
    return this.router.supervised()?.handle?.worker ?? null;
  }

  /** Tells the router that these senders' outboxes changed (all of them when omitted). */
  kickRouter(senders?: string[]): void {
    this.router.kick(senders);
  }
}
