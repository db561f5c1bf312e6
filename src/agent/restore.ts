import { agentPaths } from '../layout/paths.ts';
import { sweepTempFiles } from '../fs/atomic.ts';
import { commitCursor, readCursor } from '../queue/cursor.ts';
import { readStateFile } from './state-store.ts';
import type { RestoredAgent } from '../queue/transport.ts';

/**
 * Brings an agent's folder back to its last commit after a crash and returns the context
 * to restore the actor from: temp files swept, cursor.json mirrored. (The last turn's
 * messages need nothing: the router reads them from the commit record; handled inbox
 * entries stay in the log, where the cursor says they were handled.)
 */
export function restoreAgentState(root: string, agentId: string): RestoredAgent {
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
    return freshAgent(agentId, cursor);
  }
  // Rewritten only when it differs: a rename over an existing file makes ext4 write the
  // new file's data out first, milliseconds per agent at the restart of a big hive.
  if (cursorOrNull(root, agentId) !== state.cursor) commitCursor(root, agentId, state.cursor, { durable: false });
  return { context: { ...state.snapshot.context, cursor: state.cursor }, from: 'state', commit: state.commit, lastSession: state.lastTurn.session ?? [], messages: state.lastTurn.messages };
}

function cursorOrNull(root: string, agentId: string): number | null {
  try {
    return readCursor(root, agentId);
  } catch {
    return null;
  }
}

/** What an agent that never committed restores to: nothing handled, from `cursor` (0 in a folder made by this start). */
export function freshAgent(agentId: string, cursor = 0): RestoredAgent {
  return { context: { agentId, cursor, handled: 0, turns: 0, brainState: null, timers: [] }, from: 'fresh', commit: 0, lastSession: [], messages: [] };
}
