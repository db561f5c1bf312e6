/**
 * Hive's error taxonomy: one table of stable codes.
 *
 * Check `err.code`, never `instanceof`: errors cross worker boundaries by
 * structured clone, which keeps own properties but drops the prototype.
 */

export const ERROR_CODES = {
  E_BAD_MESSAGE: 'A message does not satisfy the HiveMessage schema',
  E_BAD_AGENT_ID: 'An agent id does not match ^[a-z0-9][a-z0-9._-]{0,63}$',
  E_BAD_CONFIG: 'The hive configuration is invalid',
  E_BAD_ARGS: 'A command-line flag or value is invalid',
  E_LOCKED: 'Another process owns this hive root',
  E_UNKNOWN_AGENT: 'No agent with this id exists in the hive',
  E_NOT_A_HIVE: 'The folder is not a hive root',
  E_IO: 'A filesystem operation failed',
  E_TIMEOUT: 'An operation did not finish in time',
  E_BRAIN: 'A brain failed to produce a turn',
  E_STOPPED: 'The hive or actor has been stopped',
  E_WORKER: 'A worker thread failed',
  E_HOOK: 'A hook event was rejected',
  E_NOT_FOUND: 'The requested item does not exist',
  E_CONFLICT: 'The operation conflicts with the current state',
  E_HOP_CAP: 'A message passed the hop cap (a reply loop)',
  E_POISON: 'A message crashed its brain too many times in a row',
  E_NOT_REGULAR: 'A queue entry is not a regular file (a symlink, FIFO, socket, device or folder)',
  E_MACHINE: "A machine agent's XState machine threw (in an action, a guard or an invocation)",
  E_BAD_SNAPSHOT: "A machine agent's committed snapshot no longer fits its machine (the definition changed)",
  E_UNAVAILABLE: "A brain's provider cannot be started or reached (the configuration or the environment, not the message)",
} as const;

export type HiveErrorCode = keyof typeof ERROR_CODES;

export interface HiveErrorOptions {
  cause?: unknown;
  /** Extra machine-readable detail (field path, received value, pid, ...). */
  details?: Record<string, unknown>;
}

export class HiveError extends Error {
  readonly code: HiveErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: HiveErrorCode, message: string, options: HiveErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HiveError';
    this.code = code;
    this.details = options.details ?? {};
  }

  /** A plain object that survives `postMessage` and `JSON.stringify`. */
  toJSON(): { code: HiveErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** True for a HiveError or its structured-clone copy (an object with a known `code`). */
export function isHiveError(value: unknown, code?: HiveErrorCode): value is HiveError {
  if (typeof value !== 'object' || value === null) return false;
  const c = (value as { code?: unknown }).code;
  if (typeof c !== 'string' || !(c in ERROR_CODES)) return false;
  return code === undefined || c === code;
}

/** Describe a received value for an error message: `-5 (number)`, `"x" (string)`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return `${JSON.stringify(shown)} (string)`;
  }
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `${String(value)} (${typeof value})`;
}

/** The message of any thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string') {
    return (err as { message: string }).message;
  }
  return String(err);
}
