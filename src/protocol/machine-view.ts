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

/** `'a'` → `a`; `{ a: 'b' }` → `a.b`; parallel regions joined with `, `. */
export function valueText(value: JsonValue | undefined): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value)
      .map(([k, v]) => (typeof v === 'string' ? `${k}.${v}` : v && typeof v === 'object' && Object.keys(v).length > 0 ? `${k}.${valueText(v)}` : k))
      .join(', ');
  }
  return String(value);
}

/** Every active state's key, parents first: `{ a: { b: 'c' } }` → `a`, `a.b`, `a.b.c`. */
export function activeKeys(value: JsonValue | undefined, prefix = ''): string[] {
  if (typeof value === 'string') return [`${prefix}${value}`];
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => [`${prefix}${k}`, ...activeKeys(v, `${prefix}${k}.`)]);
}
