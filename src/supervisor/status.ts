import { inboxDepth } from '../queue/inbox.ts';

/** One row of `hive status` (and of the inspector's actor list). */
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
  /** A machine agent's own machine state (`armed`, `review.pending`); null for other actors. */
  machine?: string | null;
}

/** One worker host with its supervised-child state (inspector). */
export interface HostStatus {
  id: string;
  value: string;
  restarts: number;
  agents: string[];
  threadId: number | null;
}

/** The row of a runtime actor (router, miner, reflector): it has no inbox, cursor or brain. */
export function runtimeActorRow(
  id: string,
  kind: 'router' | 'miner' | 'reflector',
  state: string,
  child: { state(): string; restarts(): number; handle: { threadId: number } | null } | null,
  paused: string | null = null,
): ActorStatus {
  return {
    id,
    kind,
    brain: '-',
    host: id,
    state,
    status: withPause(child?.state() ?? 'stopped', paused),
    restarts: child?.restarts() ?? 0,
    inboxDepth: 0,
    cursor: 0,
    handled: 0,
    threadId: child?.handle?.threadId ?? null,
    conversation: null,
    busyMs: null,
  };
}

/** A running actor that waits out a shortage shows it in place of `running`: `paused: disk full`. */
export function withPause(status: string, paused: string | null): string {
  return paused && status === 'running' ? `paused: ${paused}` : status;
}

/** Messages after `cursor` in an agent's inbox; 0 when the inbox cannot be read (status must not throw). */
export function safeDepth(root: string, id: string, cursor: number): number {
  try {
    return inboxDepth(root, id, cursor);
  } catch {
    return 0;
  }
}
