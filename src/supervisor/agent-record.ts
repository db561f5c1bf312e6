export { clusterInitOf } from './cluster.ts';
import type { ActorContextSummary, AgentSettings, HostedAgentSpec } from '../protocol/worker.ts';
import type { BrainSpec, HiveConfig } from '../config/schema.ts';
import type { RegistryEntry } from '../registry/registry.ts';
import { PASSIVE_KINDS } from '../brains/create.ts';
import { RESERVED_IDS } from '../protocol/agent-id.ts';
import { committedCursor } from '../queue/committed-cursor.ts';
import type { TurnClock } from '../agent/turn-clock.ts';
import path from 'node:path';
import { moduleBrainUrl } from './bundle.ts';
import { packageRoot } from '../package-files.ts';
import { safeDepth, withPause, type ActorStatus } from './status.ts';
import { valueText } from '../protocol/machine-view.ts';
import { offlineMachineState } from '../agent/machine-state.ts';

/** What the supervisor knows of one agent of the registry. */
export interface AgentRecord {
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
  /** Why its brain cannot be started (a configuration error), or undefined. */
  problem?: string;
  /** The problem is something planted in the hive folder (`E_NOT_REGULAR`), not a mistake in the config: that agent fails, the start goes on. */
  planted?: boolean;
  /** Its folder was made by this start: told to its first worker only (HostedAgentSpec.madeNow). */
  madeNow?: boolean;
}

/** The settings every agent actor of this hive runs with. */
export function agentSettingsOf(config: HiveConfig): AgentSettings {
  const s = config.supervisor;
  return {
    turnBatch: s.turnBatch,
    brainRetries: s.brainRetries,
    sessionCaps: config.sessions,
    poisonAfter: s.poisonAfter,
    doneCap: s.doneCap,
    inboxPollMs: s.inboxPollMs,
    gapWaitMs: 2_000,
  };
}

/** What a worker is told to start for one agent (a module brain compiled to an importable URL first). */
export async function hostedSpecOf(r: AgentRecord): Promise<HostedAgentSpec> {
  const spec: HostedAgentSpec = { id: r.entry.id, name: r.entry.name, role: r.entry.role, brain: r.brain, turnClock: r.turnClock.buffer };
  if (r.forgive) spec.forgiveCrash = true;
  r.forgive = false;
  if (r.madeNow) spec.madeNow = true;
  r.madeNow = false;
  if (r.brain.kind === 'module') spec.moduleUrl = await moduleBrainUrl(r.brain.module);
  if (r.brain.kind === 'machine') spec.moduleUrl = await moduleBrainUrl(r.brain.module, { sharedXstate: path.join(packageRoot(), 'package.json') });
  if (r.brain.kind === 'command' || r.brain.kind === 'openai') spec.turnBatch = 1;
  return spec;
}

/** An agent's row of `hive status`. `host`: its supervised worker, if placed; `threadAlive`: that worker's thread runs. */
export function agentRow(root: string, r: AgentRecord, host: { state(): string; restarts(): number; handle: { threadId: number } | null } | undefined, threadAlive: boolean): ActorStatus {
  const cursor = host ? r.cursor : committedCursor(root, r.entry.id);
  // A turn stamped in the shared clock is running, whatever the last report said: a
  // brain looping on the CPU never lets its thread report 'thinking'.
  const started = threadAlive ? r.turnClock.startedAt() : null;
  const passive = PASSIVE_KINDS.has(r.brain.kind);
  return {
    id: r.entry.id,
    kind: passive ? 'passive' : 'agent',
    brain: r.brain.kind,
    host: r.hostId,
    state: host ? (started !== null ? 'thinking' : r.value) : passive ? 'waiting' : 'stopped',
    status: host ? withPause(host.state(), r.paused ?? null) : r.problem ? `failed: ${r.problem}` : r.entry.status,
    restarts: host?.restarts() ?? 0,
    inboxDepth: safeDepth(root, r.entry.id, cursor),
    cursor,
    handled: r.handled,
    threadId: host?.handle?.threadId ?? null,
    conversation: r.conversation,
    busyMs: started !== null ? Math.max(0, Date.now() - started) : null,
    machine: r.context?.machine ? valueText(r.context.machine.value) : r.brain.kind === 'machine' ? offlineMachineState(root, r.entry.id) : null,
  };
}

/** How start() and spawn() report an agent whose brain cannot be started. */
export function failureOf(r: AgentRecord): string {
  return `Agent "${r.entry.id}": ${r.problem}`;
}

/** An agent the supervisor runs: active (or failed: a new start tries again), not passive, not reserved. */
export function isRunnable(entry: RegistryEntry, brain: BrainSpec): boolean {
  return (entry.status === 'active' || entry.status === 'failed') && !PASSIVE_KINDS.has(brain.kind) && !RESERVED_IDS.has(entry.id);
}
