import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { sweepTempFiles } from '../fs/atomic.ts';
import { readRegularText } from '../fs/regular-file.ts';
import { parseMessage, parseMessageText, type HiveMessage } from '../protocol/message.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { commitCursor, readCursor } from '../queue/cursor.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import { readStateFile, type SessionTurn } from './state-store.ts';

export interface Restored {
  context: PersistedAgentContext;
  from: 'state' | 'fresh';
  /** The commit number restored from (0 before the first commit). */
  commit: number;
  /** Messages of the last committed turn that had to be written again. */
  reemitted: number;
  /** The conversation the last committed turn added (for a session whose history fell behind). */
  lastSession: SessionTurn[];
}

function isIntact(file: string, id: string): boolean {
  try {
    const r = parseMessageText(readRegularText(file).text);
    return r.ok && r.message.id === id;
  } catch {
    return false;
  }
}

/**
 * Brings an agent's folder back to its last commit after a crash and returns the context
 * to restore the actor from: temp files swept, the last turn's messages re-written where
 * missing or torn, cursor.json mirrored. (Handled inbox entries stay in the log: the
 * cursor is what says they were handled.)
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
    return { context: { agentId, cursor, handled: 0, turns: 0, brainState: null, timers: [] }, from: 'fresh', commit: 0, reemitted: 0, lastSession: [] };
  }
  const missing = state.lastTurn.messages
    .map((m) => parseMessage(m))
    .filter((r): r is { ok: true; message: HiveMessage } => r.ok)
    .map((r) => r.message)
    .filter((m) => !isIntact(path.join(p.outbox, `${m.id}.json`), m.id) && !fs.existsSync(path.join(p.sent, `${m.id}.json`)));
  if (missing.length > 0) writeOutbox(root, missing);
  commitCursor(root, agentId, state.cursor, { durable: false });
  return { context: { ...state.snapshot.context, cursor: state.cursor }, from: 'state', commit: state.commit, reemitted: missing.length, lastSession: state.lastTurn.session ?? [] };
}
