import lockfile from 'proper-lockfile';
import { hivePaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { readJsonl } from './journal.ts';
import { sessionPaths } from './paths.ts';
import { armBackground, currentSession, type ConversationTurn } from './session.ts';
import { extractiveSummary } from './summary.ts';
import { lockFs } from '../lock/lock-fs.ts';

/**
 * `snapshots.json`: named, portable recaps of conversations — knowledge, not memory
 * ("memory doesn't transfer between minds; knowledge does"). Importing one into an
 * agent arms it as background for that agent's next turn.
 */

export interface Snapshot {
  name: string;
  agent: string;
  session: string;
  created_at: string;
  turns: number;
  method: 'provider' | 'extractive';
  summary: string;
}

export function listSnapshots(root: string): Snapshot[] {
  try {
    return readJsonFile<{ snapshots: Snapshot[] }>(hivePaths(root).snapshots)?.snapshots ?? [];
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read ${hivePaths(root).snapshots}: ${(err as Error).message}`);
  }
}

async function updateSnapshots<T>(root: string, change: (list: Snapshot[]) => T): Promise<T> {
  const file = hivePaths(root).snapshots;
  const release = await lockfile.lock(file, { fs: lockFs, lockfilePath: `${file}.lock`, realpath: false, stale: 5_000, retries: { retries: 200, minTimeout: 5, maxTimeout: 50 } });
  try {
    const list = listSnapshots(root);
    const result = change(list);
    writeJsonAtomic(file, { version: 1, snapshots: list });
    return result;
  } finally {
    await release();
  }
}

export interface SnapshotOptions {
  /** Which session to distill (default: the agent's live one). */
  session?: string;
  /** The agent's provider, asked to summarize; the built-in extractive summary otherwise. */
  summarize?: (text: string) => Promise<string>;
}

/**
 * Distills a conversation into a named snapshot.
 * @example await createSnapshot(root, 'writer', 'launch-lessons')
 */
export async function createSnapshot(root: string, agentId: string, name: string, options: SnapshotOptions = {}): Promise<Snapshot> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) {
    throw new HiveError('E_BAD_ARGS', `Expected a snapshot name of letters, digits, '.', '_', '-' (at most 64), got ${JSON.stringify(name)}`);
  }
  const key = options.session ?? currentSession(root, agentId).key;
  const turns = readJsonl<ConversationTurn>(sessionPaths(root, agentId, key).conversation);
  if (turns.length === 0) throw new HiveError('E_NOT_FOUND', `Session ${key} of "${agentId}" has no turns to snapshot`);
  let summary: string;
  let method: Snapshot['method'] = 'extractive';
  if (options.summarize) {
    summary = (await options.summarize(turns.map((t) => `${t.role}: ${t.text}`).join('\n'))).trim();
    method = 'provider';
  } else summary = extractiveSummary(turns);
  const snap: Snapshot = { name, agent: agentId, session: key, created_at: new Date().toISOString(), turns: turns.length, method, summary };
  await updateSnapshots(root, (list) => {
    const i = list.findIndex((s) => s.name === name);
    if (i >= 0) list.splice(i, 1);
    list.push(snap);
  });
  appendEvent(root, { type: 'snapshot.created', agent: agentId, name, session: key, method });
  return snap;
}

/** Arms a snapshot as background for `agentId`'s next turn. */
export function importSnapshot(root: string, name: string, agentId: string): Snapshot {
  const snap = listSnapshots(root).find((s) => s.name === name);
  if (!snap) throw new HiveError('E_NOT_FOUND', `No snapshot named "${name}" in ${hivePaths(root).snapshots}`);
  const key = currentSession(root, agentId).key;
  armBackground(
    root,
    agentId,
    key,
    `Background knowledge from snapshot "${snap.name}" (a recap of a conversation of ${snap.agent}, ${snap.created_at.slice(0, 10)}):\n${snap.summary}`,
  );
  appendEvent(root, { type: 'snapshot.imported', agent: agentId, name });
  return snap;
}
