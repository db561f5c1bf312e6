import type { JsonValue } from './timer.ts';

/** A machine agent's machine as the inspector draws it: where it is, what it holds, what it did last. */
export interface MachineView {
  /** The state value (`'drafting'`, `{ review: 'pending' }`). */
  value: JsonValue;
  /** Active states as the diagram names them (`review`, `review.pending`). */
  active: string[];
  status: string;
  context: JsonValue;
  /** The last events, newest last, each with the state it left and the one it reached. */
  recent: MachineStep[];
}

export interface MachineStep {
  at: number;
  event: string;
  from: string;
  to: string;
  /** The machine had no transition for it (logged; the cursor still moved). */
  ignored?: boolean;
}
