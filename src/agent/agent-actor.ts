// Long on purpose: fetch, think, commit and reject share one crash order (docs/architecture.md,
// "A turn, step by step") and the actor's state; split apart, each would need all of it.
import { createActor, fromPromise, type Actor } from 'xstate';
import {
  agentMachine,
  type AgentContext,
  persistedOf,
  type PersistedAgentContext,
  type TurnResult,
  type Work,
  type WorkEntry,
} from '../../machines/agent.ts';
import type { DurableTimer } from '../protocol/timer.ts';
import type { ActorInfo, AgentSettings, HostedAgentSpec, WorkerEvent } from '../protocol/worker.ts';
import type { Brain, BrainInput, BrainOutput, BrainTurn } from '../brains/types.ts';
import { describeInput } from '../brains/prompt.ts';
import { Session, currentSession } from '../session/session.ts';
import { applyConversation, localConversation } from '../session/replica.ts';
import { agentPaths } from '../layout/paths.ts';
import type { AgentLink, Transport } from '../queue/transport.ts';
import { createFsTransport } from '../queue/fs-transport.ts';
import { deadLetterData, relativeToHive } from '../queue/dead-letter.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError, errorMessage } from '../errors.ts';
import { composeMessages, godNotice, nextTimers } from './compose.ts';
import { SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { commitTurn, type StepRunner } from './commit.ts';
import { ShortageGate } from '../fs/shortage.ts';
import { inflightMarker, readInflight, withLastError, type InflightMarker } from './inflight.ts';
import type { SessionTurn } from './state-store.ts';
import type { MarkerFile } from '../fs/marker.ts';
import { encodeMessage } from '../queue/outbox.ts';
import type { Span, Tracer } from '@opentelemetry/api';
import { contextWith, endWithError, startHandle, startSend } from '../telemetry/spans.ts';
import { ContextReporter } from './context-report.ts';
import { TurnClock } from './turn-clock.ts';
import { realClock, type Clock } from './clock.ts';
import { sweepProviders } from '../brains/provider-processes.ts';
import { crashPoint } from '../testing/crash-point.ts';


export interface AgentActorOptions {
  root: string;
  spec: HostedAgentSpec;
  brain: Brain;
  settings: AgentSettings;
  emit: (event: WorkerEvent) => void;
  /** Called when the actor failed (brain threw, disk error): the host lets the worker crash. */
  onFatal: (error: unknown) => void;
  clock?: Clock;
  /** Spans for handle/send (null or absent: telemetry off). */
  tracer?: Tracer | null;
  /**
   * The message path (default: the filesystem transport over `root`). The actor reads,
   * commits and learns of work through `transport.agent(id)`, and sends the hive's notices
   * with `transport.send`.
   */
  transport?: Transport;
}

/** The actors of this thread by agent id: what the provided machine's effects run on. */
const hosted = new Map<string, AgentActor>();

function actorOf(agentId: string): AgentActor {
  const a = hosted.get(agentId);
  if (!a) throw new HiveError('E_STOPPED', `No actor of agent "${agentId}" runs in this thread`);
  return a;
}

let provided: ReturnType<typeof agentMachine.provide> | null = null;

/**
 * The agent machine with its effects, made once per thread for all its actors: each
 * effect finds its actor by the agent id in its input. `provide` rebuilds the machine's
 * state nodes, and a pooled host starting 100 agents did that 100 times in cold code.
 */
function providedMachine(): ReturnType<typeof agentMachine.provide> {
  provided ??= agentMachine.provide({
    actors: {
      fetchWork: fromPromise(async ({ input }) => actorOf(input.agentId).effects.fetchWork(input.cursor, input.timers)),
      // Not run through the shortage gate as a whole: a full disk must not ask the brain
      // again. The turn's own writes are (the invalid-draft dead letters, the session).
      think: fromPromise(async ({ input }) => actorOf(input.context.agentId).effects.think(input.context, input.work)),
      commit: fromPromise(async ({ input }) => actorOf(input.next.agentId).effects.commit(input.next, input.messages)),
      rejectPoison: fromPromise(async ({ input }) => actorOf(input.next.agentId).effects.rejectPoison(input.next, input.poison)),
    },
  });
  return provided;
}

/**
 * One agent actor: the pure agent machine wired to the hive folder and a brain.
 * @example
 * const a = new AgentActor({ root, spec, brain, settings, emit, onFatal });
 * await a.start(); a.wake();
 */
export class AgentActor {
  readonly id: string;
  private readonly clock: Clock;
  private actor: Actor<typeof agentMachine> | null = null;
  private inflight: InflightMarker | null = null;
  private marker: MarkerFile | null = null;
  private timerHandle: unknown = null;
  private stopListening: (() => void) | null = null;
  private gapSince: number | null = null;
  private restoredFrom: 'state' | 'fresh' | null = null;
  private latestState: { value: string; cursor: number; handled: number } | null = null;
  private reported: { value: string; cursor: number; handled: number } = { value: 'idle', cursor: -1, handled: -1 };
  private stateReport: NodeJS.Immediate | null = null;
  private turnStart = 0;
  private session: Session | null = null;
  private pendingTurns: { input: BrainInput; out: BrainOutput }[] = [];
  private stopping = false;
  /** Since when, and how often, the provider has been unavailable (null: it is not). */
  private providerWait: { since: number; attempt: number } | null = null;
  private thinkStart = 0;
  /** Send spans of the turn being committed (ended once the messages are durable). */
  private sendSpans: Span[] = [];
  private contextReport: ContextReporter | null = null;
  /** Read by the supervisor's turn deadline (null when none was shared). */
  private readonly turnClock: TurnClock | null;
  /** Every step that writes runs through it: a full disk pauses the actor, never crashes it. */
  private readonly gate: ShortageGate;
  private readonly runStep: StepRunner;
  private readonly transport: Transport;
  /** The agent's side of the transport: its inbox, its commits, word of new work. */
  private readonly link: AgentLink;

  /** The machine's effects for this actor (run by the thread's provided machine). */
  readonly effects = {
    fetchWork: (cursor: number, timers: DurableTimer[]) => this.runStep(() => this.fetchWork(cursor, timers)),
    think: (context: PersistedAgentContext, work: Work) => this.think(context, work),
    commit: (next: PersistedAgentContext, messages: TurnResult['messages']) => this.commit(next, messages),
    rejectPoison: (next: PersistedAgentContext, poison: WorkEntry & { attempts: number; lastError?: string }) => this.rejectPoison(next, poison),
  };

  constructor(private readonly o: AgentActorOptions) {
    this.id = o.spec.id;
    this.transport = o.transport ?? createFsTransport(o.root, { pollMs: o.settings.inboxPollMs });
    this.link = this.transport.agent(o.spec.id);
    this.clock = o.clock ?? realClock;
    this.turnClock = o.spec.turnClock ? new TurnClock(o.spec.turnClock) : null;
    this.gate = new ShortageGate({
      onPause: (reason, error) => {
        this.o.emit({ type: 'actor.paused', agent: this.id, reason, error: errorMessage(error) });
        appendEvent(this.o.root, { type: 'actor.paused', agent: this.id, reason, error: errorMessage(error) });
      },
      onResume: (pausedMs) => {
        this.o.emit({ type: 'actor.resumed', agent: this.id, pausedMs });
        appendEvent(this.o.root, { type: 'actor.resumed', agent: this.id, paused_ms: pausedMs });
      },
    });
    this.runStep = (step) => this.gate.run(step);
  }

  /** Restores from the commit record and starts the machine. */
  async start(): Promise<ActorInfo> {
    // Provider processes a previous worker of this agent left running die first: the turn
    // they were for is about to be run again (or was committed), and must not run twice.
    // (An agent whose folder this start made has neither: `madeNow`, its first worker only.)
    const madeNow = this.o.spec.madeNow === true;
    if (!madeNow) sweepProviders(this.o.root, this.id);
    const restored = await this.runStep(() => this.link.restore({ madeNow }));
    this.restoredFrom = restored.from;
    // The brain checks the committed state fits it (a machine agent restores its machine),
    // and may ask for timers armed as it started.
    const startNow = this.clock.now();
    const armed = (await this.o.brain.restore?.(restored.context.brainState, startNow)) ?? [];
    if (armed.length > 0) restored.context.timers = nextTimers(this.id, { kind: 'timer', timer: { id: 'start', name: 'start', at: startNow, payload: null } }, restored.context.timers, armed, [], startNow);
    // What the restore had to finish of the last commit (the crash-window tests read it).
    appendEvent(this.o.root, { type: 'actor.restored', agent: this.id, from: restored.from, commit: restored.commit, cursor: restored.context.cursor });
    if (this.o.brain.conversational) {
      // Cluster mode: the conversation as the cluster kept it, if another machine ran the agent last.
      const kept = this.link.conversation;
      const saved = kept ? await this.runStep(() => kept.load()) : null;
      if (saved && applyConversation(this.o.root, this.id, saved)) appendEvent(this.o.root, { type: 'session.replica-restored', agent: this.id, session: saved.current.key, commit: saved.commit });
      const current = currentSession(this.o.root, this.id);
      this.session = new Session(this.o.root, this.id, current.key, this.o.settings.sessionCaps, current.commit ?? null);
      await this.runStep(() => this.session!.catchUp(restored.commit, restored.lastSession));
    }
    this.inflight = madeNow ? null : readInflight(this.o.root, this.id);
    // Ended for a pool mate's fault: the attempt the crash cut short is not this message's.
    if (this.o.spec.forgiveCrash && this.inflight?.pid === process.pid) this.inflight = { ...this.inflight, attempts: Math.max(0, this.inflight.attempts - 1) };
    // The last commit's messages may not be routed yet: the router reads them from the record.
    if (restored.commit > 0) this.o.emit({ type: 'outbox.written', agent: this.id, count: 0 });
    const machine = providedMachine();
    hosted.set(this.id, this);
    // Restore from JSON the XState way: resolve the persisted snapshot, then start from it.
    // (Its agentId is this actor's: the provided machine finds the actor by it.)
    const snapshot = machine.resolveState({
      value: 'idle',
      context: { ...restored.context, agentId: this.id, work: null, result: null, wakePending: true, stopRequested: false } satisfies AgentContext,
    });
    this.actor = createActor(machine, { snapshot, input: { agentId: this.id } });
    this.contextReport = new ContextReporter(this.id, this.o.emit, this.clock, this.o.brain.describe?.bind(this.o.brain));
    this.actor.subscribe({
      next: (s) => this.onSnapshot(String(s.value), s.context),
      error: (err) => {
        // A step given up on at a stop while it waited out a shortage (ShortageGate.stop): a stop, not a failure.
        if (this.stopping && err instanceof HiveError && err.code === 'E_STOPPED') return;
        this.o.emit({ type: 'actor.failed', agent: this.id, error: { message: errorMessage(err) } });
        appendEvent(this.o.root, { type: 'actor.failed', agent: this.id, error: errorMessage(err) });
        this.o.onFatal(err);
      },
    });
    this.actor.start();
    // Listening first: a delivery from here on wakes the actor (the link's poll takes the
    // inbox as it is now as its baseline).
    this.stopListening = this.link.onWork(() => this.wake());
    // A snapshot restored with resolveState runs no eventless transition until an event
    // arrives: wake it so inbox entries after the cursor are replayed (due timers wake it
    // on their own: armTimer). On the next turn of the event loop, not now: `start()` must
    // return (its host reports the actor up) before any brain runs, or a brain that never
    // yields would hold the start forever. An inbox known to hold nothing after the cursor
    // needs no read.
    if (this.link.hasEntriesAfter?.(restored.context.cursor) !== false) setImmediate(() => this.wake());
    return this.info();
  }

  wake(): void {
    if (this.actor?.getSnapshot().status === 'active') this.actor.send({ type: 'hive.wake' });
  }

  /** Asks the actor to stop after its current turn; resolves true if it did within `graceMs`. */
  async stop(graceMs: number): Promise<boolean> {
    const actor = this.actor;
    this.stopping = true;
    this.clearTimers();
    if (!actor) return true;
    if (actor.getSnapshot().status !== 'active') return true;
    actor.send({ type: 'hive.stop' });
    // A step waiting out a shortage (NATS gone, a full disk) is not waited for: it is run again after the restart.
    this.gate.stop();
    const stopped = await new Promise<boolean>((resolve) => {
      if (actor.getSnapshot().status !== 'active') return resolve(true);
      const timeout = setTimeout(() => resolve(false), graceMs);
      const sub = actor.subscribe({
        next: (s) => {
          if (s.status !== 'active') {
            clearTimeout(timeout);
            sub.unsubscribe();
            resolve(true);
          }
        },
        complete: () => {
          clearTimeout(timeout);
          resolve(true);
        },
        error: (err) => {
          clearTimeout(timeout);
          resolve(err instanceof HiveError && err.code === 'E_STOPPED');
        },
      });
    });
    if (hosted.get(this.id) === this) hosted.delete(this.id);
    this.marker?.close();
    await this.link.close();
    await this.o.brain.close?.();
    this.o.emit({ type: 'actor.stopped', agent: this.id });
    return stopped;
  }

  info(): ActorInfo {
    const s = this.actor?.getSnapshot();
    return {
      id: this.id,
      value: s ? String(s.value) : 'starting',
      status: s ? (s.status === 'done' ? 'stopped' : s.status === 'stopped' ? 'stopped' : s.status) : 'active',
      cursor: s?.context.cursor ?? 0,
      handled: s?.context.handled ?? 0,
      turns: s?.context.turns ?? 0,
      timers: s?.context.timers ?? [],
      restoredFrom: this.restoredFrom,
      conversation: this.session?.mode ?? null,
    };
  }

  private onSnapshot(value: string, context: AgentContext): void {
    this.latestState = { value, cursor: context.cursor, handled: context.handled };
    if (!this.stateReport) this.stateReport = setImmediate(() => this.reportState());
    this.contextReport?.changed(context);
    if (value === 'idle') this.armTimer(context.timers);
  }

  /**
   * One `actor.state` event per pass of the event loop, with the latest value: a turn that
   * runs fetching → thinking → committing → idle without waiting on anything shows only
   * where it ended (a postMessage per transition showed in an agent thread's profile at light
   * load and sat in every turn's latency). A turn that waits (a brain thinking) is seen waiting.
   */
  private reportState(): void {
    this.stateReport = null;
    const s = this.latestState;
    if (!s || (s.value === this.reported.value && s.cursor === this.reported.cursor && s.handled === this.reported.handled)) return;
    this.reported = s;
    this.o.emit({ type: 'actor.state', agent: this.id, ...s });
  }

  /** Re-arms the wake-up for the earliest durable timer (docs/architecture.md, "Durable timers"). */
  private armTimer(timers: DurableTimer[]): void {
    if (this.timerHandle !== null) this.clock.clearTimeout(this.timerHandle);
    this.timerHandle = null;
    const next = timers[0];
    if (!next) return;
    this.timerHandle = this.clock.setTimeout(() => {
      this.timerHandle = null;
      this.wake();
    }, Math.max(0, next.at - this.clock.now()));
  }

  private clearTimers(): void {
    if (this.timerHandle !== null) this.clock.clearTimeout(this.timerHandle);
    this.timerHandle = null;
    this.stopListening?.();
    this.stopListening = null;
    this.contextReport?.cancel();
  }

  // ---- effects supplied to the machine ------------------------------------------------

  private async fetchWork(cursor: number, timers: DurableTimer[]): Promise<Work | null> {
    this.turnStart = performance.now();
    const now = this.clock.now();
    const due = timers.filter((t) => t.at <= now);
    const batch = this.o.spec.turnBatch ?? this.o.settings.turnBatch;
    const read = await this.link.fetch(cursor, batch);
    const entries: WorkEntry[] = [];
    for (const e of read) {
      if (e.seq !== cursor + 1 + entries.length) break;
      entries.push({ seq: e.seq, message: e.message, ...(e.duplicate && { duplicate: e.duplicate }) });
    }
    if (read.length > 0 && entries.length === 0) {
      // A gap: seq cursor+1 is missing. Usually a delivery still renaming; wait, then skip.
      this.gapSince ??= now;
      if (now - this.gapSince >= this.o.settings.gapWaitMs) {
        this.gapSince = null;
        appendEvent(this.o.root, { type: 'inbox.gap', agent: this.id, missing_from: cursor + 1, next: read[0]!.seq });
        return { entries: [], timers: [], poison: null, skipTo: read[0]!.seq - 1 };
      }
      this.clock.setTimeout(() => this.wake(), 20);
    } else this.gapSince = null;
    if (entries.length === 0 && due.length === 0) return null;
    let more = false;
    if (entries.length > 0) {
      const first = entries[0]!;
      const m = this.inflight?.seq === first.seq ? this.inflight : null;
      const samePid = m?.pid === process.pid;
      const attempts = m ? (samePid ? m.attempts + 1 : m.attempts) : 1;
      const restarts = m ? (samePid ? m.restarts : m.restarts + 1) : 0;
      const limit = this.o.settings.poisonAfter;
      if (attempts > limit || restarts > limit * 2) {
        return { entries: [], timers: [], poison: { ...first, attempts: attempts - 1 + restarts, ...(m?.lastError ? { lastError: m.lastError } : {}) }, skipTo: null };
      }
      // After a crash, re-run one message at a time so a poison message is pinned down exactly.
      if (attempts > 1 || restarts > 0) entries.splice(1);
      more = read.length >= batch || entries.length < read.length;
      // Written first, kept after: a write that fails (a full disk) and is tried again must
      // not count as one more attempt.
      const inflight = { seq: first.seq, attempts, restarts, pid: process.pid };
      this.marker ??= inflightMarker(this.o.root, this.id);
      this.marker.write(inflight);
      this.inflight = inflight;
    }
    return { entries, timers: due, poison: null, skipTo: null, more };
  }

  private async think(context: PersistedAgentContext, work: Work): Promise<TurnResult> {
    this.thinkStart = performance.now();
    const p = agentPaths(this.o.root, this.id);
    let state = context.brainState;
    let timers = context.timers;
    let cursor = context.cursor;
    let handled = 0;
    const messages = [];
    const inputs: BrainInput[] = [
      ...work.timers.map((timer) => ({ kind: 'timer' as const, timer })),
      ...work.entries.filter((e) => !e.duplicate).map((e) => ({ kind: 'message' as const, seq: e.seq, message: e.message })),
    ];
    // Entries already handled at an earlier seq: passed, not handled (the cursor covers them below).
    const passed = work.entries.filter((e) => e.duplicate);
    for (const e of passed) appendEvent(this.o.root, { type: 'message.duplicate-passed', agent: this.id, id: e.message.id, seq: e.seq });
    const tracer = this.o.tracer ?? null;
    this.pendingTurns = [];
    // A turn run again (its first run met a full disk) sends anew; the first run's spans end here.
    for (const span of this.sendSpans.splice(0)) endWithError(span, 'turn run again');
    for (const input of inputs) {
      const now = this.clock.now();
      const turn: BrainTurn = {
        input,
        agent: { id: this.id, name: this.o.spec.name, role: this.o.spec.role },
        state,
        now,
        root: this.o.root,
        agentDir: p.dir,
      };
      if (this.session) turn.conversation = this.session.view();
      const handleSpan = input.kind === 'message' ? startHandle(tracer, input.message, this.id, input.seq) : null;
      let out;
      try {
        out = await this.callBrain(turn);
      } catch (err) {
        endWithError(handleSpan, errorMessage(err));
        throw err;
      }
      if (this.session) this.pendingTurns.push({ input, out });
      const composed = composeMessages(this.id, input, out.messages ?? [], now);
      if (tracer) {
        // Each reply gets its own send span (child of this handling), carried in its traceparent.
        composed.messages = composed.messages.map((m) => {
          const sent = startSend(tracer, m, input.kind === 'message' ? contextWith(handleSpan) : undefined);
          if (sent.span) this.sendSpans.push(sent.span);
          return sent.message;
        });
      }
      handleSpan?.end();
      for (const bad of composed.invalid) {
        await this.runStep(() =>
          deadLetterData(this.o.root, `draft-from-${this.id}.json`, `${JSON.stringify(bad.draft, null, 2)}\n`, {
            error: `Brain of "${this.id}" produced an invalid message: ${bad.error}`,
            code: 'E_BAD_MESSAGE',
            source: `agents/${this.id} (brain output)`,
          }),
        );
      }
      messages.push(...composed.messages);
      if (out.state !== undefined) state = out.state;
      timers = nextTimers(this.id, input, timers, out.schedule ?? [], out.cancel ?? [], now);
      if (input.kind === 'message') {
        cursor = input.seq;
        handled += 1;
      }
    }
    for (const e of passed) cursor = Math.max(cursor, e.seq);
    return { cursor, messages, brainState: state, timers, handled };
  }

  /**
   * Runs the brain with the retry policy: a provider's failed turn (non-zero exit,
   * unreadable output, timeout, HTTP error) is retried in place with backoff; a plain
   * throw, or the last retry's error,
   * propagates, the worker crashes and the supervisor's policy takes over (restart,
   * then poison after repeated crashes). Nothing is committed for a failed turn, so no
   * message is lost.
   */
  private async callBrain(turn: BrainTurn): Promise<BrainOutput> {
    const retries = this.o.settings.brainRetries;
    for (let attempt = 0; ; attempt++) {
      let err: unknown;
      try {
        const out = await this.timed(() => this.o.brain.handle(turn));
        this.providerBack();
        return out;
      } catch (e) {
        err = e;
      }
      const code = (err as { code?: string }).code;
      const message = errorMessage(err);
      if (code === 'E_UNAVAILABLE' && !this.stopping) {
        // Not the message's fault (the provider cannot be started or reached): the turn
        // waits, paused, and is tried again until the operator fixes it. No attempt counts.
        await this.waitForProvider(message);
        attempt -= 1;
        continue;
      }
      await this.runStep(() => this.session?.record({ kind: 'error', attempt: attempt + 1, code: code ?? null, message, details: (err as { details?: unknown }).details ?? null }));
      appendEvent(this.o.root, { type: 'brain.failed', agent: this.id, attempt: attempt + 1, code: code ?? null, error: message });
      // Provider failures (exit codes, timeouts, HTTP errors) are retried in place; any
      // other throw is a bug in the brain: let it crash.
      const retryable = code === 'E_BRAIN' || code === 'E_TIMEOUT';
      if (!retryable || attempt >= retries || this.stopping) {
        // What the poison reason will name if this keeps happening (the marker survives the crash).
        if (this.inflight && this.marker) {
          this.inflight = withLastError(this.inflight, message);
          this.marker.write(this.inflight);
        }
        throw err;
      }
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
  }

  /** Paused while the provider is unavailable: logged and reported once, then waited out with backoff up to 30 s. */
  private async waitForProvider(error: string): Promise<void> {
    const reason = 'brain unavailable';
    if (this.providerWait === null) {
      this.providerWait = { since: Date.now(), attempt: 0 };
      this.o.emit({ type: 'actor.paused', agent: this.id, reason, error });
      appendEvent(this.o.root, { type: 'actor.paused', agent: this.id, reason, error });
    }
    const delay = Math.min(30_000, 500 * 2 ** this.providerWait.attempt++);
    await new Promise((r) => setTimeout(r, delay));
  }

  /** The provider answered again after a wait: resumed. */
  private providerBack(): void {
    if (this.providerWait === null) return;
    const pausedMs = Date.now() - this.providerWait.since;
    this.providerWait = null;
    this.o.emit({ type: 'actor.resumed', agent: this.id, pausedMs });
    appendEvent(this.o.root, { type: 'actor.resumed', agent: this.id, paused_ms: pausedMs });
  }

  /**
   * One brain call under the turn deadline (supervisor.turnTimeoutMs): its start is stamped
   * in the clock the supervisor reads, in wall-clock time (not the injectable clock), and
   * cleared the moment it returns, so nothing but the brain itself counts against it.
   */
  private async timed<T>(call: () => Promise<T>): Promise<T> {
    this.turnClock?.start(Date.now());
    try {
      return await call();
    } finally {
      this.turnClock?.clear();
    }
  }

  /** What one input and its answer add to the conversation. */
  private sessionTurnOf(input: BrainInput, out: BrainOutput): SessionTurn {
    const sent = out.messages.map((m) => `→ ${m.to} (${m.act}): ${m.body}`).join('\n');
    return { user: describeInput(input), assistant: out.reply ?? (sent || null) };
  }

  /** After the commit (number `commit`): the session learns what the committed turns said. */
  private recordTurns(commit: number): void {
    if (!this.session) return;
    // One turn at a time, each dropped once recorded: tried again after a full disk, the
    // ones already written are not written twice.
    while (this.pendingTurns.length > 0) {
      const { input, out } = this.pendingTurns[0]!;
      this.session.record({ kind: 'input', text: describeInput(input), id: input.kind === 'message' ? input.message.id : input.timer.id }, ...(out.trace ?? []));
      const t = this.sessionTurnOf(input, out);
      this.session.endTurn(t.user, t.assistant, commit);
      this.pendingTurns.shift();
    }
  }

  /**
   * Cluster mode: the conversation goes to the cluster after each commit, before the next
   * one, so the cluster's copy is never more than one commit behind (the commit record's
   * session turns fill that one in at a restore).
   */
  private async saveConversation(commit: number): Promise<void> {
    const kept = this.link.conversation;
    if (!kept || !this.session) return;
    const replica = localConversation(this.o.root, this.id, commit);
    // A crash here: the cluster's copy is one commit behind; the commit record's session
    // turns fill it in at the next restore (test/cluster.test.ts kills a machine here).
    crashPoint('conversation.before-save');
    if (replica) await this.runStep(() => kept.save(replica));
  }

  private async commit(next: PersistedAgentContext, messages: TurnResult['messages']): Promise<void> {
    const commitStart = performance.now();
    const work = this.actor?.getSnapshot().context.work;
    const previous = this.actor ? persistedOf(this.actor.getSnapshot().context) : undefined;
    // Reported once the turn is durable (state.wal), not after its effects: the reply files
    // follow, and a restore would finish them from the commit record.
    const committed = () =>
      this.o.emit({
        type: 'actor.processed',
        agent: this.id,
        cursor: next.cursor,
        handled: (work?.entries ?? []).filter((e) => !e.duplicate).map((e) => ({ seq: e.seq, id: e.message.id, from: e.message.from, act: e.message.act })),
        sent: messages.map((m) => ({ id: m.id, to: m.to, act: m.act, subject: m.subject, body: m.body, in_reply_to: m.in_reply_to })),
        timings: { fetchMs: this.thinkStart - this.turnStart, thinkMs: commitStart - this.thinkStart, commitMs: performance.now() - commitStart },
      });
    // The commit record also carries what the turn adds to the conversation, so a crash
    // before history.json is written loses nothing of it (Session.catchUp).
    const session = this.session ? this.pendingTurns.map((t) => this.sessionTurnOf(t.input, t.out)) : [];
    const done = await commitTurn(this.link, {
      next,
      messages,
      session,
      ...(previous ? { previous } : {}),
      onCommitted: committed,
      runStep: this.runStep,
    });
    for (const span of this.sendSpans.splice(0)) span.end();
    await this.runStep(() => this.recordTurns(done.commit));
    await this.saveConversation(done.commit);
    if (messages.length > 0) this.o.emit({ type: 'outbox.written', agent: this.id, count: messages.length });
  }

  private async rejectPoison(next: PersistedAgentContext, poison: WorkEntry & { attempts: number; lastError?: string }): Promise<void> {
    const last = poison.lastError ? `; the last attempt ended with: ${poison.lastError}` : '';
    const p = agentPaths(this.o.root, this.id);
    const name = `${String(poison.seq).padStart(12, '0')}-${poison.message.id}.json`;
    const rec = await this.runStep(() =>
      deadLetterData(this.o.root, `poison-${this.id}-${name}`, encodeMessage(poison.message), {
        error: `Message crashed the brain of "${this.id}" ${poison.attempts} times in a row (poison)${last}`,
        code: 'E_POISON',
        source: `${relativeToHive(this.o.root, p.inbox)}#${poison.seq}`,
        agent: this.id,
        attempts: poison.attempts,
      }, { exactName: true }),
    );
    const notice = godNotice(
      'poison',
      `${this.id}/${poison.message.id}`,
      `Poison message dead-lettered at ${this.id}`,
      `Message ${poison.message.id} from ${poison.message.from} crashed the brain of ${this.id} ${poison.attempts} times in a row${last}. ` +
        `It was moved to dead-letter/${rec.name} and the agent went on with its next message.`,
      poison.message.id,
    );
    await this.runStep(() => this.transport.send([notice]));
    this.o.emit({ type: 'outbox.written', agent: SYSTEM_SENDER, count: 1 });
    await commitTurn(this.link, { next, messages: [], runStep: this.runStep });
    this.inflight = null;
    this.o.emit({
      type: 'actor.poisoned',
      agent: this.id,
      seq: poison.seq,
      id: poison.message.id,
      attempts: poison.attempts,
      deadLetter: rec.name,
      from: poison.message.from,
    });
  }
}
