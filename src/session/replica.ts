import fs from 'node:fs';
import { readJsonFile, writeFileAtomic, writeJsonAtomic } from '../fs/atomic.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { makeDir } from '../fs/modes.ts';
import { currentSessionFile, isSessionKey, sessionPaths } from './paths.ts';
import type { CurrentSession } from './session.ts';

/**
 * An agent's conversation as the cluster keeps it (docs/architecture.md, "Cluster mode"):
 * its live session key and that session's `history.json` and `conversation.jsonl`, as of
 * commit `commit`. Saved after each committed turn, so it is never more than one commit
 * behind the commit record, whose session turns fill in the one it lacks
 * (Session.catchUp). The transcript (a journal for people) and armed background stay on
 * the machine that wrote them.
 */
export interface ConversationReplica {
  version: 1;
  agent: string;
  commit: number;
  current: CurrentSession;
  /** history.json's text (null: there was none, or it was too large to keep). */
  history: string | null;
  conversation: string;
}

function readText(file: string): string | null {
  try {
    return readRegularFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** The conversation of `agent` on this machine's disk, as of `commit`; null when it has no session yet. */
export function localConversation(root: string, agent: string, commit: number): ConversationReplica | null {
  let current: CurrentSession | null = null;
  try {
    current = readJsonFile<CurrentSession>(currentSessionFile(root, agent)) ?? null;
  } catch {
    current = null;
  }
  if (!current || !isSessionKey(current.key)) return null;
  const p = sessionPaths(root, agent, current.key);
  return { version: 1, agent, commit, current, history: readText(p.history), conversation: readText(p.conversation) ?? '' };
}

/** The commit this machine's history.json of the live session is complete up to (-1: none). */
function localHistoryCommit(root: string, agent: string, key: string): number {
  try {
    const h = readJsonFile<{ key?: string; commit?: number }>(sessionPaths(root, agent, key).history);
    return h?.key === key && Number.isInteger(h.commit) ? h.commit! : -1;
  } catch {
    return -1;
  }
}

/**
 * Before the agent's session is opened on this machine: the cluster's copy replaces the
 * local one unless the local one is of the same session and at least as far along (this
 * machine ran the agent last). Returns whether it was written.
 */
export function applyConversation(root: string, agent: string, replica: ConversationReplica): boolean {
  if (!isSessionKey(replica.current.key)) return false;
  const key = replica.current.key;
  let localKey: string | null = null;
  try {
    localKey = readJsonFile<CurrentSession>(currentSessionFile(root, agent))?.key ?? null;
  } catch {
    localKey = null;
  }
  if (localKey === key && localHistoryCommit(root, agent, key) >= replica.commit) return false;
  const p = sessionPaths(root, agent, key);
  makeDir(p.dir);
  if (replica.history !== null) writeFileAtomic(p.history, replica.history, { durable: false });
  else fs.rmSync(p.history, { force: true });
  writeFileAtomic(p.conversation, replica.conversation, { durable: false });
  writeJsonAtomic(currentSessionFile(root, agent), replica.current);
  return true;
}
