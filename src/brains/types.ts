import type { Act, HiveMessage } from '../protocol/message.ts';
import type { DurableTimer, JsonValue } from '../protocol/timer.ts';
import type { ConversationView, TranscriptEvent } from '../session/types.ts';
import type { MachineStep, MachineView } from '../protocol/machine-view.ts';

export type { JsonValue, DurableTimer, ConversationView, TranscriptEvent, MachineStep, MachineView };

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
  /** Events for the session transcript: the prompt, stderr, exit codes, timings. */
  trace?: TranscriptEvent[];
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
  /** The session (history and briefing) for conversational brains. */
  conversation?: ConversationView;
}

/**
 * A brain: given a turn, answer with messages and a new state. Must not write to the
 * hive itself; the runtime commits the result atomically. Throwing fails the turn
 * (the worker crashes and the message is retried, then dead-lettered as poison).
 */
export interface Brain {
  readonly kind: string;
  /** Keeps a session (history.json, transcript, conversation log) and sees it each turn. */
  readonly conversational?: boolean;
  handle(turn: BrainTurn): Promise<BrainOutput>;
  /** Summarize text with this brain's model (snapshots, the reflector). */
  summarize?(text: string): Promise<string>;
  /** One raw call of the brain's model with a prompt: its answer text (a machine agent's `hiveThink`). */
  complete?(prompt: string): Promise<string>;
  /**
   * Checks and loads the committed state at the agent's start, before any turn. Throwing
   * `E_BAD_SNAPSHOT` marks the agent failed (god is told): the state no longer fits the brain.
   * May answer timers to arm now (a machine's delays armed as it started, not committed yet).
   */
  restore?(state: JsonValue, now: number): Promise<TimerRequest[] | void>;
  /** What the inspector and `hive status` show of a state (a machine agent's own machine). */
  describe?(state: JsonValue): MachineView | null;
  /** Cancel an in-flight turn (stop) and free resources. */
  close?(): Promise<void>;
}
