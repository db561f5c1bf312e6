/** A JSON value, as stored in a commit record and carried by a timer. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A durable timer: a deadline kept in the agent's commit record, re-armed when the agent is
 * restored and fired once (docs/architecture.md, "Durable timers").
 */
export interface DurableTimer {
  id: string;
  name: string;
  /** Epoch ms when the timer is due. */
  at: number;
  payload: JsonValue;
}
