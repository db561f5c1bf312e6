import type { Act, HiveMessage } from '../protocol/message.ts';
import type { DurableTimer, JsonValue } from '../../machines/agent.ts';

export type { JsonValue, DurableTimer };

/** What a brain is asked to handle: one delivered message or one due timer. */
export type BrainInput =
  | { kind: 'message'; seq: number; message: HiveMessage }
  | { kind: 'timer'; timer: DurableTimer };

/** A message a brain wants to send; the runtime fills id, from, hops, created_at. */
export interface Draft {
  to: string;
  act: Act;
  body: string;
  subject?: string;
  needs_human?: boolean;
  requires_reply?: boolean;
  in_reply_to?: string | null;
  conversation?: string;
}

/** Ask for a durable timer: it fires after `delayMs`, even across restarts. */
export interface TimerRequest {
  name: string;
  delayMs: number;
  payload?: JsonValue;
}

export interface BrainOutput {
  messages: Draft[];
  /** The brain's new state (persisted with the cursor). Omitted: unchanged. */
  state?: JsonValue;
  schedule?: TimerRequest[];
  /** Names of pending timers to cancel. */
  cancel?: string[];
  /** Text for the agent's conversation log (defaults to the sent bodies). */
  reply?: string;
}

export interface AgentIdentity {
  id: string;
  name: string;
  role: string;
}

/** Everything a brain sees for one turn. */
export interface BrainTurn {
  input: BrainInput;
  agent: AgentIdentity;
  state: JsonValue;
  now: number;
  root: string;
  agentDir: string;
}

/**
 * A brain: given a turn, answer with messages and a new state. Must not write to the
 * hive itself; the runtime commits the result atomically. Throwing fails the turn
 * (the worker crashes and the message is retried, then dead-lettered as poison).
 */
export interface Brain {
  readonly kind: string;
  handle(turn: BrainTurn): Promise<BrainOutput>;
  /** Cancel an in-flight turn (stop) and free resources. */
  close?(): Promise<void>;
}
