import { committedCursor } from './committed-cursor.ts';
import { commitCursor } from './cursor.ts';
import { lastInboxSeq } from './inbox.ts';

/**
 * Marks an externally run agent's inbox handled through `seq` (the hooks socket's acks and
 * `hive mcp`'s `ack`): forward only, never past what was delivered. `moved` is false for a
 * seq at or below the cursor (acknowledged already); `beyond` names the last delivered seq
 * when `seq` is past it (nothing moved). The caller checks that no actor of Hive's runs the
 * agent: such an agent's cursor moves with its committed turns.
 */
export function acknowledgeThrough(root: string, agentId: string, seq: number): { cursor: number; moved: boolean } | { beyond: number } {
  const cursor = committedCursor(root, agentId);
  if (seq <= cursor) return { cursor, moved: false };
  const last = lastInboxSeq(root, agentId);
  if (seq > last) return { beyond: last };
  commitCursor(root, agentId, seq);
  return { cursor: seq, moved: true };
}
