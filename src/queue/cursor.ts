import { agentPaths } from '../layout/paths.ts';
import fsp from 'node:fs/promises';
import { readJsonFile, tempNameFor, writeJsonAtomic } from '../fs/atomic.ts';
import { hiveModes } from '../fs/modes.ts';
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
  writeJsonAtomic(agentPaths(root, agentId).cursor, cursorFile(seq), options);
}

function cursorFile(seq: number): CursorFile {
  return { seq, updated_at: new Date().toISOString() };
}

/**
 * `commitCursor(..., { durable: false })` off the calling thread: the write and the rename
 * run on libuv's pool. A rename over an existing file makes ext4 push the new file's data
 * to the disk first (auto_da_alloc), which held an agent's thread for milliseconds per
 * mirror in `bench:peers`' profiles. For mirrors only: nothing waits on it being there.
 */
export async function mirrorCursorAsync(root: string, agentId: string, seq: number): Promise<void> {
  const target = agentPaths(root, agentId).cursor;
  const tmp = tempNameFor(target);
  try {
    // The text writeJsonAtomic writes (commitCursor), without its flush.
    await fsp.writeFile(tmp, `${JSON.stringify(cursorFile(seq), null, 2)}\n`, { mode: hiveModes().file, flag: 'wx' });
    await fsp.rename(tmp, target);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
}
