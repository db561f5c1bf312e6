import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';

/**
 * The ack token of the messages a `Stop` handed an externally run agent, kept until they are
 * acknowledged: the next `Stop` with `stop_hook_active` acknowledges them. On disk
 * (`agents/<id>/hook-ack.json`), not in memory: a supervisor restarted in between must
 * still know what was handed out, or the agent would be handed the same messages again.
 */
function file(root: string, agentId: string): string {
  return path.join(agentPaths(root, agentId).dir, 'hook-ack.json');
}

/** The token handed out last and not acknowledged yet, or null. */
export function pendingAck(root: string, agentId: string): string | null {
  try {
    const v = readJsonFile<{ ack?: unknown }>(file(root, agentId));
    return typeof v?.ack === 'string' ? v.ack : null;
  } catch {
    return null;
  }
}

/** Records the token handed out now (null: nothing outstanding). */
export function setPendingAck(root: string, agentId: string, ack: string | null): void {
  writeJsonAtomic(file(root, agentId), { ack });
}
