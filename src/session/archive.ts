import fs from 'node:fs';
import lockfile from 'proper-lockfile';
import { hivePaths, agentPaths } from '../layout/paths.ts';
import { listDir, readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { realSubfolders } from '../fs/regular-file.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { readJsonl } from './journal.ts';
import { currentSession, startNewSession, type ConversationTurn } from './session.ts';
import { currentSessionFile, isSessionKey, sessionPaths } from './paths.ts';
import { lockFs } from '../lock/lock-fs.ts';

/**
 * `sessions.json`: closed conversations, newest first, capped (evicting one deletes its
 * files). Closing archives instead of deleting; `clear` forgets (deletes, never archives);
 * `reopen` makes an archived session live again; the startup sweep deletes session
 * folders that are neither live nor archived. Cleanup is symmetrical: a session's files
 * go together.
 */

export interface ArchivedSession {
  key: string;
  agent: string;
  title: string;
  closed_at: string;
  turns: number;
  first_message: string;
  reason: string;
}

interface ArchiveFile {
  version: 1;
  /** The cap the hive was configured with (sessions.archiveEntries), kept for offline commands. */
  cap?: number;
  sessions: ArchivedSession[];
}

/** sessions.archiveEntries when neither the caller nor sessions.json says otherwise. */
export const DEFAULT_ARCHIVE_CAP = 60;

function readArchiveFile(root: string): ArchiveFile | undefined {
  try {
    return readJsonFile<ArchiveFile>(hivePaths(root).sessions);
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read ${hivePaths(root).sessions}: ${(err as Error).message}`);
  }
}

export function readArchive(root: string): ArchivedSession[] {
  return readArchiveFile(root)?.sessions ?? [];
}

/**
 * Changes sessions.json under its lock. `change` gets the sessions and the cap in force
 * (the caller's, else the one recorded in the file, else the default); the cap is recorded.
 */
async function updateArchive<T>(root: string, cap: number | undefined, change: (sessions: ArchivedSession[], cap: number) => T): Promise<T> {
  const file = hivePaths(root).sessions;
  const release = await lockfile.lock(file, {
    fs: lockFs,
    lockfilePath: `${file}.lock`,
    realpath: false,
    stale: 5_000,
    retries: { retries: 200, minTimeout: 5, maxTimeout: 50 },
  });
  try {
    const current = readArchiveFile(root);
    const sessions = current?.sessions ?? [];
    const inForce = cap ?? current?.cap ?? DEFAULT_ARCHIVE_CAP;
    const result = change(sessions, inForce);
    writeJsonAtomic(file, { version: 1, cap: inForce, sessions } satisfies ArchiveFile);
    return result;
  } finally {
    await release();
  }
}

/**
 * Records the configured cap in sessions.json (the supervisor, at start) and evicts what
 * is beyond it, so offline commands (`hive archive` with no hive running) keep it too.
 */
export async function applyArchiveCap(root: string, cap: number): Promise<number> {
  const evicted = await updateArchive(root, cap, (sessions, c) => sessions.splice(c));
  for (const e of evicted) deleteSessionFiles(root, e.agent, e.key);
  return evicted.length;
}

function deleteSessionFiles(root: string, agentId: string, key: string): void {
  fs.rmSync(sessionPaths(root, agentId, key).dir, { recursive: true, force: true });
}

function summaryOf(root: string, agentId: string, key: string): Pick<ArchivedSession, 'turns' | 'first_message' | 'title'> {
  const turns = readJsonl<ConversationTurn>(sessionPaths(root, agentId, key).conversation);
  const first = turns.find((t) => t.role === 'user')?.text ?? '';
  return { turns: turns.length, first_message: first.slice(0, 200), title: first.split('\n')[0]!.slice(0, 80) || '(empty)' };
}

/**
 * Archives the agent's live session and starts a new one. A session without a single
 * turn is dropped instead (nothing worth reopening). Returns the archived entry.
 * The caller makes sure no actor writes to the session meanwhile.
 */
export async function archiveSession(root: string, agentId: string, reason: string, cap?: number, spare?: string): Promise<ArchivedSession | null> {
  const live = currentSession(root, agentId);
  const summary = summaryOf(root, agentId, live.key);
  startNewSession(root, agentId);
  if (summary.turns === 0) {
    deleteSessionFiles(root, agentId, live.key);
    return null;
  }
  const entry: ArchivedSession = { key: live.key, agent: agentId, closed_at: new Date().toISOString(), reason, ...summary };
  const evicted = await updateArchive(root, cap, (sessions, c) => {
    sessions.unshift(entry);
    const over = sessions.splice(c);
    // `spare`: a session about to be reopened is not evicted on the way (it leaves the archive next).
    const i = over.findIndex((e) => e.key === spare);
    if (i >= 0) sessions.push(...over.splice(i, 1));
    return over;
  });
  for (const e of evicted) deleteSessionFiles(root, e.agent, e.key);
  appendEvent(root, { type: 'session.archived', agent: agentId, session: live.key, reason, evicted: evicted.length });
  return entry;
}

/** Deletes the live session's files and starts a new one (cleared means cleared). */
export function clearSession(root: string, agentId: string): string {
  const live = currentSession(root, agentId);
  deleteSessionFiles(root, agentId, live.key);
  const next = startNewSession(root, agentId);
  appendEvent(root, { type: 'session.cleared', agent: agentId, session: live.key });
  return next.key;
}

/** Makes an archived session live again for its agent (the live one is archived first). */
export async function reopenSession(root: string, key: string, cap?: number): Promise<ArchivedSession> {
  if (!isSessionKey(key)) throw new HiveError('E_BAD_ARGS', `Expected a session key (a GUID), got ${JSON.stringify(key)}`);
  const entry = readArchive(root).find((s) => s.key === key);
  if (!entry) throw new HiveError('E_NOT_FOUND', `No archived session ${key} in ${hivePaths(root).sessions}`);
  await archiveSession(root, entry.agent, `replaced by reopened ${key}`, cap, key);
  await updateArchive(root, cap, (sessions) => {
    const i = sessions.findIndex((s) => s.key === key);
    if (i >= 0) sessions.splice(i, 1);
  });
  const extra = startNewSession(root, entry.agent, key);
  appendEvent(root, { type: 'session.reopened', agent: entry.agent, session: extra.key });
  return entry;
}

/** Startup sweep: session folders that are neither live nor archived are deleted. */
export function sweepOrphanSessions(root: string, madeNow: ReadonlySet<string> = new Set()): string[] {
  const archived = new Set(readArchive(root).map((s) => `${s.agent}/${s.key}`));
  const swept: string[] = [];
  for (const agentId of realSubfolders(hivePaths(root).agents)) {
    // Real folders only (a symlinked agent folder is refused, nothing removed through it).
    if (madeNow.has(agentId)) continue; // made by this start: no session folder yet
    let dir: string;
    try {
      dir = agentPaths(root, agentId).sessions;
    } catch {
      continue;
    }
    let live: string | null = null;
    try {
      live = readJsonFile<{ key: string }>(currentSessionFile(root, agentId))?.key ?? null;
    } catch {
      live = null;
    }
    for (const name of listDir(dir)) {
      if (!isSessionKey(name) || name === live || archived.has(`${agentId}/${name}`)) continue;
      fs.rmSync(`${dir}/${name}`, { recursive: true, force: true });
      swept.push(`${agentId}/${name}`);
    }
  }
  if (swept.length > 0) appendEvent(root, { type: 'session.orphans-swept', sessions: swept });
  return swept;
}
