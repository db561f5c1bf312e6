import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, sweepTempFiles, writeJsonAtomic } from '../fs/atomic.ts';
import { parseMessage, type HiveMessage } from '../protocol/message.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { moveToDone } from '../queue/inbox.ts';
import { commitCursor, readCursor } from '../queue/cursor.ts';
import { HiveError } from '../errors.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';

/**
 * `state.json`: the committed state of an agent actor. One atomic write per turn holds
 * the machine snapshot (value + persisted context, cursor and durable timers included)
 * and the messages that turn emitted.
 *
 * Commit, in order (a crash between steps leaves):
 *   1. state.json, durably     before: the turn is replayed (brain asked again, nothing was written)
 *   2. outbox files, durably   between 1 and 2: restore re-writes `lastTurn.messages` missing from
 *                              outbox/ and outbox/.sent/ (same ids: the router drops copies)
 *   3. inbox entries → .done   between 2 and 3: restore moves entries with seq ≤ cursor
 *   4. cursor.json mirror      lazily; state.json wins when they differ
 */

export interface StateFile {
  version: 1;
  agent: string;
  cursor: number;
  snapshot: { value: string; context: PersistedAgentContext };
  lastTurn: { cursor: number; messages: HiveMessage[] };
  committed_at: string;
}

export function readStateFile(root: string, agentId: string): StateFile | undefined {
  const file = agentPaths(root, agentId).state;
  let data: StateFile | undefined;
  try {
    data = readJsonFile<StateFile>(file);
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (data === undefined) return undefined;
  if (data.version !== 1 || data.agent !== agentId || !Number.isInteger(data.cursor) || typeof data.snapshot?.context !== 'object') {
    throw new HiveError('E_IO', `${file} is not a state file of agent "${agentId}" (version ${String(data.version)})`);
  }
  return data;
}

/** Step 1 of a commit: the new state and the turn's messages in one durable write. */
export function writeStateFile(root: string, next: PersistedAgentContext, messages: HiveMessage[]): void {
  const state: StateFile = {
    version: 1,
    agent: next.agentId,
    cursor: next.cursor,
    snapshot: { value: 'idle', context: next },
    lastTurn: { cursor: next.cursor, messages },
    committed_at: new Date().toISOString(),
  };
  writeJsonAtomic(agentPaths(root, next.agentId).state, state);
}

/** Full commit (steps 1–3). */
export function commitTurn(root: string, next: PersistedAgentContext, messages: HiveMessage[], doneCap: number): void {
  writeStateFile(root, next, messages);
  if (messages.length > 0) writeOutbox(root, messages);
  moveToDone(root, next.agentId, next.cursor, doneCap);
}

export interface Restored {
  context: PersistedAgentContext;
  from: 'state' | 'fresh';
  /** Messages of the last committed turn that had to be written again. */
  reemitted: number;
}

/**
 * Brings an agent's folder back to a committed state after a crash and returns the
 * context to restore the actor from.
 */
export function restoreAgentState(root: string, agentId: string, doneCap: number): Restored {
  const p = agentPaths(root, agentId);
  for (const dir of [p.dir, p.outbox, p.inbox, p.sent, p.done]) sweepTempFiles(dir);
  const state = readStateFile(root, agentId);
  if (!state) {
    let cursor = 0;
    try {
      cursor = readCursor(root, agentId);
    } catch {
      cursor = 0;
    }
    moveToDone(root, agentId, cursor, doneCap);
    return {
      context: { agentId, cursor, handled: 0, turns: 0, brainState: null, timers: [] },
      from: 'fresh',
      reemitted: 0,
    };
  }
  const missing = state.lastTurn.messages
    .map((m) => parseMessage(m))
    .filter((r): r is { ok: true; message: HiveMessage } => r.ok)
    .map((r) => r.message)
    .filter((m) => !fs.existsSync(path.join(p.outbox, `${m.id}.json`)) && !fs.existsSync(path.join(p.sent, `${m.id}.json`)));
  if (missing.length > 0) writeOutbox(root, missing);
  moveToDone(root, agentId, state.cursor, doneCap);
  commitCursor(root, agentId, state.cursor, { durable: false });
  return { context: { ...state.snapshot.context, cursor: state.cursor }, from: 'state', reemitted: missing.length };
}

export interface InflightMarker {
  seq: number;
  /** Starts of this seq's turn that ended in a worker crash inside one supervisor process. */
  attempts: number;
  /** Supervisor processes that died while this seq was in flight (SIGKILL, power cut). */
  restarts: number;
  pid: number;
}

/**
 * The in-flight marker: which inbox seq the brain is working on and how many times it
 * was started. Written (not fsynced) before each turn; a worker crash leaves it behind,
 * which is how a message that keeps crashing its brain is recognised as poison.
 * Crashes of the whole supervisor process are counted apart (`restarts`) with a higher
 * limit: a supervisor killed from outside is not the message's fault.
 */
export function readInflight(root: string, agentId: string): InflightMarker | null {
  try {
    const m = readJsonFile<InflightMarker>(agentPaths(root, agentId).inflight);
    return m && Number.isInteger(m.seq) && Number.isInteger(m.attempts) ? { ...m, restarts: m.restarts ?? 0, pid: m.pid ?? 0 } : null;
  } catch {
    return null;
  }
}

export function writeInflight(root: string, agentId: string, marker: InflightMarker): void {
  fs.writeFileSync(agentPaths(root, agentId).inflight, JSON.stringify(marker));
}
