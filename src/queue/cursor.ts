import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';

export interface CursorFile {
  /** The last inbox sequence number that was processed. 0 before the first. */
  seq: number;
  updated_at?: string;
}

/** The agent's cursor: the last processed inbox seq (0 when nothing was processed). */
export function readCursor(root: string, agentId: string): number {
  const file = agentPaths(root, agentId).cursor;
  let c: CursorFile | undefined;
  try {
    c = readJsonFile<CursorFile>(file);
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read cursor ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (c === undefined) return 0;
  if (!Number.isInteger(c.seq) || c.seq < 0) {
    throw new HiveError('E_IO', `Cursor ${file} holds seq ${JSON.stringify(c.seq)}; expected a non-negative integer`);
  }
  return c.seq;
}

/**
 * Atomically replaces the cursor. `durable: false` is used where the cursor only
 * mirrors a value already committed elsewhere (an actor's state.json).
 */
export function commitCursor(root: string, agentId: string, seq: number, options: { durable?: boolean } = {}): void {
  if (!Number.isInteger(seq) || seq < 0) {
    throw new HiveError('E_IO', `Expected cursor seq to be a non-negative integer, got ${seq}`);
  }
  writeJsonAtomic(agentPaths(root, agentId).cursor, { seq, updated_at: new Date().toISOString() }, options);
}
