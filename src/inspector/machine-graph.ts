import { toDirectedGraph, type DirectedGraphNode } from '@xstate/graph';
import type { AnyStateMachine } from 'xstate';
import { agentMachine } from '../../machines/agent.ts';
import { routerMachine } from '../../machines/router.ts';
import { supervisedChildMachine } from '../../machines/supervised-child.ts';
import { minerMachine } from '../../machines/miner.ts';
import { reflectorMachine } from '../../machines/reflector.ts';

/**
 * A machine definition as a plain graph (states and labelled transitions), derived from
 * the pure machine with `@xstate/graph`. Eventless (`always`) transitions, which the
 * directed graph leaves out, are added from the state nodes. Root-level transitions
 * ("in any state") start from a pseudo-state `*`.
 */

export const MACHINES = {
  agent: agentMachine,
  router: routerMachine,
  'supervised-child': supervisedChildMachine,
  miner: minerMachine,
  reflector: reflectorMachine,
} as const satisfies Record<string, AnyStateMachine>;

export type MachineName = keyof typeof MACHINES;

export function isMachineName(v: string): v is MachineName {
  return Object.hasOwn(MACHINES, v);
}

export interface GraphState {
  /** The state's key: what `String(snapshot.value)` is while the machine is in it. */
  key: string;
  type: 'atomic' | 'final' | 'any';
  initial: boolean;
  /** The invoked effect (fetchWork, think, ...). */
  invoke: string | null;
}

export interface GraphTransition {
  id: string;
  source: string;
  target: string;
  label: string;
}

export interface MachineGraph {
  id: string;
  states: GraphState[];
  transitions: GraphTransition[];
}

interface TransitionLike {
  eventType: string;
  guard?: unknown;
  target?: readonly { id: string }[];
}

function guardName(guard: unknown): string {
  if (!guard) return '';
  if (typeof guard === 'string') return ` [${guard}]`;
  const t = (guard as { type?: unknown }).type;
  return typeof t === 'string' ? ` [${t}]` : ' [guard]';
}

/** 'xstate.done.actor.0.agent.fetching' → 'done'; 'xstate.after.backoff.…' → 'after backoff'. */
export function eventLabel(eventType: string): string {
  if (eventType === '') return 'always';
  if (eventType.startsWith('xstate.done.actor')) return 'done';
  if (eventType.startsWith('xstate.error.actor')) return 'error';
  const after = /^xstate\.after\.([^.]+)/.exec(eventType);
  if (after) return `after ${after[1]}`;
  return eventType.replace(/^hive\./, '');
}

/**
 * The graph of a machine definition.
 * @example machineGraph(MACHINES.agent).states.map((s) => s.key) // ['idle', 'fetching', ...]
 */
export function machineGraph(machine: AnyStateMachine): MachineGraph {
  // The root state node, not the machine: a user's machine built with their own copy of
  // xstate fails @xstate/graph's `instanceof StateMachine` test, a state node has no such test.
  const root = toDirectedGraph(machine.root as unknown as AnyStateMachine);
  const prefix = `${root.id}.`;
  const keyOf = (id: string) => (id === root.id ? '*' : id.startsWith(prefix) ? id.slice(prefix.length) : id);
  const initialKey = String((root.stateNode as unknown as { initial?: { target?: { key: string }[] } }).initial?.target?.[0]?.key ?? '');
  const states: GraphState[] = [];
  const merged = new Map<string, GraphTransition>();
  const add = (source: string, target: string, label: string) => {
    const k = `${source}->${target}`;
    const existing = merged.get(k);
    if (existing) {
      if (!existing.label.split(' / ').includes(label)) existing.label += ` / ${label}`;
    } else merged.set(k, { id: `t${merged.size}`, source, target, label });
  };
  const visit = (n: DirectedGraphNode) => {
    const node = n.stateNode as unknown as { key: string; type: string; invoke: { src: unknown }[]; always?: TransitionLike[] };
    const isRoot = n.id === root.id;
    if (!isRoot) {
      const invoke = node.invoke[0]?.src;
      states.push({ key: keyOf(n.id), type: node.type === 'final' ? 'final' : 'atomic', initial: node.key === initialKey, invoke: typeof invoke === 'string' ? invoke : null });
    }
    for (const e of n.edges) {
      const t = e.transition as unknown as TransitionLike;
      if (isRoot && !t.target) continue; // actions only, no state change
      add(keyOf(e.source.id), keyOf(e.target.id), `${eventLabel(t.eventType)}${guardName(t.guard)}`);
    }
    for (const t of node.always ?? []) {
      for (const target of t.target ?? []) add(keyOf(n.id), keyOf(target.id), `always${guardName(t.guard)}`);
    }
    for (const c of n.children) visit(c);
  };
  visit(root);
  const transitions = [...merged.values()];
  if (transitions.some((t) => t.source === '*')) states.unshift({ key: '*', type: 'any', initial: false, invoke: null });
  return { id: root.id, states, transitions };
}
