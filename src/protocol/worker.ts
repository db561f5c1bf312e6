/**
 * The main ↔ worker protocol, in one place (piscina's types.ts idea).
 *
 * - The worker receives `WorkerInit` as `workerData`, including `events`: a MessagePort
 *   for one-way events to the main thread.
 * - The worker exposes its API (`AgentHostApi` or `RouterHostApi`) on `parentPort`
 *   with comlink, then posts `{ type: 'host.ready' }` on the events port: the handshake.
 *   The main thread calls the API only after that message.
 * - Errors cross as `{ code, message }` objects (structured clone drops prototypes).
 */
import type { MessagePort } from 'node:worker_threads';
import type { BrainSpec } from '../config/schema.ts';
import type { DurableTimer } from './timer.ts';
import type { HiveMessage } from './message.ts';
import type { CommitHint, DeliveryHint } from '../queue/transport.ts';
import type { MachineView } from './machine-view.ts';
import type { WorkerTelemetryInit } from '../telemetry/worker.ts';
import type { RestoreMode, SessionCaps } from '../session/types.ts';
import type { MemoryConfig } from '../memory/config.ts';
import type { MinePassResult } from '../memory/mine.ts';
import type { ReflectResult } from '../memory/reflect.ts';
import type { TestSeams } from '../testing/seams.ts';

export type HostKind = 'agent-host' | 'router-host' | 'miner-host' | 'reflector-host';

export interface AgentSettings {
  turnBatch: number;
  /** In-place retries of a failed brain turn before the worker is let crash. */
  brainRetries: number;
  sessionCaps: SessionCaps;
  poisonAfter: number;
  doneCap: number;
  inboxPollMs: number;
  /** How long an inbox gap may stay open before the cursor skips it. */
  gapWaitMs: number;
}

export interface RouterSettingsInit {
  pollMs: number;
  hopCap: number;
  batchPerSender: number;
  sentCap: number;
  doneCap: number;
  /** Use file events (chokidar) in addition to notices and the poll. */
  watch: boolean;
}

export interface ClusterInit {
  servers: string[];
  prefix: string;
  replicas: number;
  /** This machine's name. */
  host: string;
  /** The agents that run on this machine (the router here routes what they send). */
  local: string[];
  /** Every agent of the hive, wherever it runs (each has an inbox stream). */
  agents: string[];
  /** Which machine each configured agent runs on. */
  placement: Record<string, string>;
}

export interface WorkerInit {
  kind: HostKind;
  hostId: string;
  root: string;
  events: MessagePort;
  agentSettings?: AgentSettings;
  routerSettings?: RouterSettingsInit;
  /** Set when telemetry is on: the worker starts its own tracer provider. */
  telemetry?: WorkerTelemetryInit;
  memorySettings?: MemoryHostSettings;
  /** Cluster mode: the message path is NATS JetStream (absent: the filesystem transport). */
  cluster?: ClusterInit;
  /** Tests only: the seams this thread installs (src/testing/seams.ts). */
  seams?: TestSeams;
  /** How many files the thread keeps open between uses (src/fs/open-files.ts). */
  openFiles?: number;
}

/** An agent as a host starts it. */
export interface HostedAgentSpec {
  id: string;
  name: string;
  role: string;
  brain: BrainSpec;
  /** Compiled module-brain URL (module brains only). */
  moduleUrl?: string;
  /** Effective turn batch for this agent (slow brains take one message per commit). */
  turnBatch?: number;
  /** Shared with the supervisor: when the running turn started (see src/agent/turn-clock.ts). */
  turnClock?: SharedArrayBuffer;
  /**
   * Its last worker was ended for another agent's fault (a pooled host terminated at that
   * agent's turn deadline): a turn it was in does not count toward poison.
   */
  forgiveCrash?: boolean;
  /**
   * Its folder was made by this start of the hive (nothing of an earlier run can be in it):
   * its first actor skips the restore's look at its files. Only ever in the spec of the
   * first worker it is started in; a restarted worker restores it in full.
   */
  madeNow?: boolean;
}

export interface ActorInfo {
  id: string;
  value: string;
  status: 'active' | 'done' | 'error' | 'stopped';
  cursor: number;
  handled: number;
  turns: number;
  timers: DurableTimer[];
  restoredFrom: 'state' | 'fresh' | null;
  /** How much of its conversation a conversational brain got back (restore cascade). */
  conversation: RestoreMode | null;
}

/**
 * The direct line between the router and one agent host (a MessageChannel the
 * supervisor hands to both): the router wakes the recipients of a delivery, the host
 * tells the router whose outbox changed. Saves a hop through the main thread each way.
 * A kick with `commits`: only those commits changed (told as hints, Transport.offerCommits),
 * none of the senders' files. A wake with `deliveries`: what was delivered to its agents
 * (Transport.takeDeliveries); an agent woken without any reads its inbox.
 */
export type RouterLinkMessage = { type: 'wake'; agents: string[]; deliveries?: DeliveryHint[] } | { type: 'kick'; senders: string[]; commits?: CommitHint[] };

/**
 * The supervisor's main thread → the router, over a channel of their own: kicks (`senders`
 * null: every outbox), and `hive.send()`'s messages (src/router/ingress.ts).
 */
export type MainToRouterMessage = { type: 'kick'; senders: string[] | null } | { type: 'send'; items: { tag: number; message: HiveMessage }[] };

/**
 * The router → the main thread: sends routed (every recipient's inbox holds them durably, or
 * they were dead-lettered), and sends it will not take (their sender has no agent folder
 * here): the main thread writes those to the send log, whose writer gives the reason.
 */
export type RouterToMainMessage = { type: 'sent'; tags: number[] } | { type: 'refused'; tags: number[] };

export interface AgentHostApi {
  /**
   * Starts these agents' actors. An agent whose brain cannot be loaded (its module does not
   * import, exports no brain, its provider refuses its settings) is not started and is
   * returned in `failed`: a configuration error, not a crash.
   */
  startActors(specs: HostedAgentSpec[]): Promise<{ started: ActorInfo[]; failed: BrainLoadFailure[] }>;
  /** Connects the host to the router (replaces an earlier link). */
  attachRouter(port: MessagePort): void;
  wake(ids: string[]): void;
  stopActor(id: string, graceMs: number): Promise<boolean>;
  stopAll(graceMs: number): Promise<void>;
  status(): ActorInfo[];
}

/** An agent whose brain could not be loaded, and why. */
export interface BrainLoadFailure {
  agent: string;
  error: string;
  /** The error's code, when it had one (`E_NOT_REGULAR`: something planted in the hive folder, not a mistake in the config). */
  code?: string;
}

export interface RouterInfo {
  value: string;
  passes: number;
  delivered: number;
  rejected: number;
}

export interface RouterHostApi {
  start(): Promise<void>;
  /** Outboxes changed (these senders wrote; all when omitted): route soon. */
  kick(senders?: string[]): void;
  /** Connects the main thread: its kicks and `hive.send()`'s messages, and their acknowledgements. */
  attachMain(port: MessagePort): void;
  /** Connects an agent host: deliveries to `agents` wake them through `port`. */
  attachHost(hostId: string, agents: string[], port: MessagePort): void;
  /** Updates which agents a linked host carries (runtime spawn into a pool). */
  updateHost(hostId: string, agents: string[]): void;
  stop(): Promise<void>;
  status(): RouterInfo;
}

export interface Delivery {
  /** The inbox it landed in. */
  agent: string;
  seq: number;
  id: string;
  from: string;
  to: string;
  act: string;
  subject: string;
  /** The body, cut to 200 characters. */
  body: string;
  needs_human: boolean;
  requires_reply: boolean;
  in_reply_to: string | null;
  conversation: string;
}

/** What the inspector shows of an agent's context (coalesced: at most 4 a second per actor). */
export interface ActorContextSummary {
  cursor: number;
  handled: number;
  turns: number;
  timers: { name: string; at: number }[];
  /** The brain's state as JSON, cut to 2,000 characters. */
  brainState: string;
  /** A machine agent's own machine: state, context, last events. */
  machine?: MachineView;
}

// ---- memory actors (miner, reflector) ------------------------------------------------

export interface MemoryHostSettings {
  memory: MemoryConfig;
  /** Where relative command paths in `memory` resolve (the config file's folder). */
  configDir: string;
}

export interface MinerInfo {
  value: string;
  passes: number;
  lastMineAt: number | null;
  lastError: string | null;
}

/** What both memory hosts answer. `attachJobs` hands over the shared pool's port (before `start`). */
export interface MemoryHostApi {
  attachJobs(port: MessagePort): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The miner host. `mine` resolves when a pass that started after the call has finished. */
export interface MinerHostApi extends MemoryHostApi {
  mine(force: boolean): Promise<{ result: MinePassResult | null; error: string | null }>;
  /** A memory changed (e.g. `remember`): mine soon if it grew past the threshold. */
  notify(agent: string): void;
  status(): MinerInfo;
}

export interface ReflectorInfo {
  value: string;
  condensed: number;
  aborted: number;
  queued: number;
}

export interface ReflectorHostApi extends MemoryHostApi {
  /** Queues a condense (forced: even below the thresholds); resolves with its result. */
  condense(agent: string, force: boolean): Promise<ReflectResult>;
  /** A memory changed: condense it if it is now oversized. */
  notify(agent: string): void;
  status(): ReflectorInfo;
}

/** One-way events from workers to the supervisor. */
export type WorkerEvent =
  | { type: 'host.ready'; hostId: string; threadId: number }
  | { type: 'actor.started'; agent: string; info: ActorInfo; reemitted: number }
  | { type: 'actor.state'; agent: string; value: string; cursor: number; handled: number }
  | {
      type: 'actor.processed';
      agent: string;
      cursor: number;
      handled: { seq: number; id: string; from: string; act: string }[];
      sent: { id: string; to: string; act: string; subject: string; body: string; in_reply_to: string | null }[];
      /** Where the turn's time went, in ms (read inbox, brain, commit up to durable). */
      timings: { fetchMs: number; thinkMs: number; commitMs: number };
    }
  | { type: 'actor.poisoned'; agent: string; seq: number; id: string; attempts: number; deadLetter: string; from: string }
  | { type: 'actor.failed'; agent: string; error: { code?: string; message: string } }
  | { type: 'actor.stopped'; agent: string }
  /** An actor (an agent, or `router`) waits out a shortage (a full disk...) instead of failing. */
  | { type: 'actor.paused'; agent: string; reason: string; error: string }
  | { type: 'actor.resumed'; agent: string; pausedMs: number }
  | { type: 'outbox.written'; agent: string; count: number }
  /** `woken`: the recipients the router woke itself, over its direct channel to their host (main wakes the others). */
  | { type: 'router.delivered'; deliveries: Delivery[]; latenciesMs: number[]; woken?: string[] }
  | { type: 'router.rejected'; items: { sender: string; ref: string; error: string; code?: string }[] }
  | { type: 'router.state'; value: string }
  /** Cluster mode: the router mirrored a memory.md written in the cluster (src/memory/cluster-memory.ts). */
  | { type: 'memory.mirrored'; agent: string }
  | { type: 'actor.context'; agent: string; context: ActorContextSummary }
  | { type: 'memory.state'; actor: 'miner' | 'reflector'; value: string }
  | { type: 'memory.mined'; result: MinePassResult }
  | { type: 'memory.condensed'; result: ReflectResult };
