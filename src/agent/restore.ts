import { agentPaths } from '../layout/paths.ts';
import { sweepTempFiles } from '../fs/atomic.ts';
import { commitCursor, readCursor } from '../queue/cursor.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import { readStateFile, type SessionTurn } from './state-store.ts';

export interface Restored {
  context: PersistedAgentContext;
  from: 'state' | 'fresh';
  /** The commit number restored from (0 before the first commit). */
  commit: number;
  /** The conversation the last committed turn added (for a session whose history fell behind). */
  lastSession: SessionTurn[];
}

/**
 * Brings an agent's folder back to its last commit after a crash and returns the context
 * to restore the actor from: temp files swept, cursor.json mirrored. (The last turn's
 * messages need nothing: the router reads them from the commit record; handled inbox
 * entries stay in the log, where the cursor says they were handled.)
 */
export function restoreAgentState(root: string, agentId: string): Restored {
  const p = agentPaths(root, agentId);
  for (const dir of [p.dir, p.outbox, p.inbox, p.sent]) sweepTempFiles(dir);
  const state = readStateFile(root, agentId);
  if (!state) {
    let cursor = 0;
    try {
      cursor = readCursor(root, agentId);
    } catch {
      cursor = 0;
    }
    return { context: { agentId, cursor, handled: 0, turns: 0, brainState: null, timers: [] }, from: 'fresh', commit: 0, lastSession: [] };
  }
  commitCursor(root, agentId, state.cursor, { durable: false });
  return { context: { ...state.snapshot.context, cursor: state.cursor }, from: 'state', commit: state.commit, lastSession: state.lastTurn.session ?? [] };
}
