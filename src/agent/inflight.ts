import { agentPaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { MarkerFile } from '../fs/marker.ts';

export interface InflightMarker {
  seq: number;
  /** Starts of this seq's turn that ended in a worker crash inside one supervisor process. */
  attempts: number;
  /** Supervisor processes that died while this seq was in flight (SIGKILL, power cut). */
  restarts: number;
  pid: number;
  /** The error the last attempt ended with (cut to fit the marker), for the poison reason. */
  lastError?: string;
}

/** The marker with `error` as its last error, cut so the record fits its 256-byte slot. */
export function withLastError(m: InflightMarker, error: string): InflightMarker {
  let cut = error.replace(/[^\x20-\x7e]/g, '?').slice(0, 160);
  while (cut.length > 0 && Buffer.byteLength(JSON.stringify({ ...m, lastError: cut })) >= 250) cut = cut.slice(0, -10);
  return { ...m, lastError: cut };
}

/**
 * The in-flight marker: which inbox seq the brain is working on and how many times it
 * was started. Written in place (not fsynced) before each turn; a worker crash leaves
 * it behind, which is how a message that keeps crashing its brain is recognised as
 * poison. Crashes of the whole supervisor process are counted apart (`restarts`) with a
 * higher limit: a supervisor killed from outside is not the message's fault.
 */
export function readInflight(root: string, agentId: string): InflightMarker | null {
  try {
    const m = readJsonFile<InflightMarker>(agentPaths(root, agentId).inflight);
    return m && Number.isInteger(m.seq) && Number.isInteger(m.attempts) ? { ...m, restarts: m.restarts ?? 0, pid: m.pid ?? 0 } : null;
  } catch {
    return null;
  }
}

/** Opens the agent's in-flight marker for repeated in-place writes. */
export function inflightMarker(root: string, agentId: string): MarkerFile {
  return new MarkerFile(agentPaths(root, agentId).inflight);
}
