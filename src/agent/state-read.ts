import { agentPaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { decodeCommitLinesAt, type StateFile } from './commit-line.ts';

/**
 * Reading an agent's committed state (state.json + state.wal, written by `StateStore` in
 * state-store.ts): the valid line with the highest commit number past the checkpoint wins.
 */

export interface WalScan {
  best: StateFile | undefined;
  /** Offset just after the best line (where the next commit goes). */
  end: number;
}

export function scanWal(file: string, agentId: string, after: number): WalScan {
  let buf: Buffer;
  try {
    buf = readRegularFile(file);
  } catch {
    return { best: undefined, end: 0 };
  }
  let best: StateFile | undefined;
  let end = 0;
  for (const line of decodeCommitLinesAt(buf, agentId)) {
    if (line.record.commit > after && line.record.commit > (best?.commit ?? -1)) {
      best = line.record;
      end = line.end;
    }
  }
  return { best, end };
}

function validate(data: StateFile | undefined, file: string, agentId: string): StateFile | undefined {
  if (data === undefined) return undefined;
  if (data.version !== 1 || data.agent !== agentId || !Number.isInteger(data.cursor) || typeof data.snapshot?.context !== 'object') {
    throw new HiveError('E_IO', `${file} is not a state file of agent "${agentId}" (version ${String(data.version)})`);
  }
  return { ...data, commit: data.commit ?? 0 };
}

/** The latest committed state of an agent (checkpoint + log), or undefined before its first commit. */
export function readStateFile(root: string, agentId: string): StateFile | undefined {
  const p = agentPaths(root, agentId);
  let checkpoint: StateFile | undefined;
  try {
    checkpoint = validate(readJsonFile<StateFile>(p.state), p.state, agentId);
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read ${p.state}: ${(err as Error).message}`, { cause: err });
  }
  return scanWal(p.stateWal, agentId, checkpoint?.commit ?? -1).best ?? checkpoint;
}

/** Offset where the next commit of an agent goes (just after its newest valid line). */
export function stateWalEnd(root: string, agentId: string): number {
  const p = agentPaths(root, agentId);
  let checkpointCommit = -1;
  try {
    checkpointCommit = readJsonFile<StateFile>(p.state)?.commit ?? -1;
  } catch {
    checkpointCommit = -1;
  }
  return scanWal(p.stateWal, agentId, checkpointCommit).end;
}
