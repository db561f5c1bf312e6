import { activeKeys } from '../protocol/machine-view.ts';
import type { JsonValue, MachineStep, MachineView } from './types.ts';

/** What a machine agent commits of its machine, and how it is read back (docs/architecture.md, "Machine agents"). */

/** A delayed event as the commit record keeps it: actors named by their path from the root. */
export interface PersistedDelay {
  source: string;
  target: string;
  id: string;
  event: JsonValue;
  at: number;
}

/** A machine agent's brain state: what its commit record holds. */
export interface MachineBrainState {
  machine: 1;
  /** Bumped by every turn: a live machine is reused only for the state it produced. */
  rev: number;
  snapshot: JsonValue;
  delays: PersistedDelay[];
  recent: MachineStep[];
}

export const TIMER_PREFIX = 'xstate:';
/** How many of the last events a machine agent's state keeps (the inspector lists them). */
export const RECENT_KEPT = 10;

export function isMachineState(v: JsonValue | undefined): v is JsonValue & MachineBrainState {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && v.machine === 1 && typeof v.rev === 'number';
}

export function describeMachineState(state: MachineBrainState): MachineView {
  const snap = state.snapshot as { value?: JsonValue; status?: string; context?: JsonValue } | null;
  return {
    value: snap?.value ?? null,
    active: activeKeys(snap?.value),
    status: snap?.status ?? 'unknown',
    context: snap?.context ?? null,
    recent: state.recent,
  };
}

/** A promise actor's logic (fromPromise): it settles. Callbacks, observables and machines run on. */
export function isPromiseLogic(logic: unknown): boolean {
  const l = logic as { transition?: (s: unknown, e: unknown, scope: unknown) => { status?: string }; root?: unknown; config?: unknown };
  if (!l || typeof l.transition !== 'function' || l.root !== undefined || typeof l.config !== 'function') return false;
  try {
    return l.transition({ status: 'active', output: undefined, error: undefined, input: undefined }, { type: 'xstate.promise.resolve', data: null }, {}).status === 'done';
  } catch {
    return false;
  }
}

/** Children whose logic cannot be restored from a snapshot (inline spawn: xstate #5057). */
export function unpersistable(snapshot: unknown, path: string): string[] {
  const children = (snapshot as { children?: Record<string, { src?: unknown; snapshot?: unknown }> } | null)?.children ?? {};
  return Object.entries(children).flatMap(([id, c]) => (typeof c.src !== 'string' ? [`${path}/${id}`] : unpersistable(c.snapshot, `${path}/${id}`)));
}

