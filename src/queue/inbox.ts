import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { listDir } from '../fs/atomic.ts';
import { HiveError, isHiveError } from '../errors.ts';
import { assertRealDirectory, entryKind, listEntries, readRegularText, type EntryKind } from '../fs/regular-file.ts';
import { parseMessageText, type HiveMessage } from '../protocol/message.ts';
import { noteAdded } from '../fs/capped.ts';
import { deadLetterFile, relativeToHive } from './dead-letter.ts';
import { makeDir } from '../fs/modes.ts';

/**
 * The inbox: `agents/<id>/inbox/<seq>-<id>.json`, seq zero-padded to 12 digits.
 * Entries are delivered by `inbox-deliver.ts` (under the inbox lock); this file holds
 * the reading side: names, reads after a cursor, and moving processed entries to
 * `inbox/.done/` (capped), where their ids stay visible to the idempotency check.
 */

export const SEQ_WIDTH = 12;
const INBOX_NAME = /^(\d{12})-([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.json$/;
export const DEFAULT_DONE_CAP = 5_000;

export function inboxFileName(seq: number, id: string): string {
  return `${String(seq).padStart(SEQ_WIDTH, '0')}-${id}.json`;
}

export function parseInboxName(name: string): { seq: number; id: string } | null {
  const m = INBOX_NAME.exec(name);
  return m ? { seq: Number(m[1]), id: m[2]! } : null;
}

export interface InboxEntry {
  seq: number;
  id: string;
  name: string;
  file: string;
  message: HiveMessage;
}

export interface RejectedInboxFile {
  name: string;
  file: string;
  seq: number | null;
  error: HiveError;
}

export interface InboxRead {
  entries: InboxEntry[];
  /** Files that are not valid inbox entries (bad name or bad content): dead-letter them. */
  rejected: RejectedInboxFile[];
}

/**
 * Reads pending entries with seq > `afterSeq`, in seq order.
 * @example const { entries } = readInbox(root, 'bob', readCursor(root, 'bob'));
 */
export function readInbox(root: string, agentId: string, afterSeq: number, limit = Infinity): InboxRead {
  const p = agentPaths(root, agentId);
  assertRealDirectory(p.inbox, `agents/${agentId}/inbox`);
  const entries: InboxEntry[] = [];
  const rejected: RejectedInboxFile[] = [];
  const named: { seq: number; id: string; name: string; kind: EntryKind }[] = [];
  for (const dirent of listEntries(p.inbox)) {
    const name = dirent.name;
    if (name.startsWith('.')) continue;
    const parsedName = parseInboxName(name);
    if (!parsedName) {
      rejected.push({
        name,
        file: path.join(p.inbox, name),
        seq: null,
        error: new HiveError('E_BAD_MESSAGE', `Inbox file name "${name}" is not <12-digit seq>-<message id>.json`),
      });
      continue;
    }
    if (parsedName.seq > afterSeq) named.push({ ...parsedName, name, kind: entryKind(dirent) });
  }
  named.sort((a, b) => a.seq - b.seq);
  for (const n of named) {
    if (entries.length >= limit) break;
    const file = path.join(p.inbox, n.name);
    let text: string;
    try {
      text = readRegularText(file, `agents/${agentId}/inbox/${n.name}`, n.kind).text;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      if (isHiveError(err, 'E_NOT_REGULAR')) {
        rejected.push({ name: n.name, file, seq: n.seq, error: err });
        continue;
      }
      throw err;
    }
    const parsed = parseMessageText(text);
    if (!parsed.ok) {
      rejected.push({ name: n.name, file, seq: n.seq, error: parsed.error });
    } else if (parsed.message.id !== n.id) {
      rejected.push({
        name: n.name,
        file,
        seq: n.seq,
        error: new HiveError('E_BAD_MESSAGE', `Inbox file "${n.name}" holds message id "${parsed.message.id}", not "${n.id}"`),
      });
    } else {
      entries.push({ seq: n.seq, id: n.id, name: n.name, file, message: parsed.message });
    }
  }
  return { entries, rejected };
}

/**
 * Reads pending entries after `afterSeq` and moves anything that is not a valid entry
 * (a garbage file, a torn or foreign message) to dead-letter/ with its reason.
 */
export function readInboxRejecting(root: string, agentId: string, afterSeq: number, limit = Infinity): InboxEntry[] {
  const { entries, rejected } = readInbox(root, agentId, afterSeq, limit);
  for (const r of rejected) {
    try {
      deadLetterFile(root, r.file, { error: r.error.message, code: r.error.code, source: relativeToHive(root, r.file) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return entries;
}

/** Every entry of an inbox, pending and done, for display (`hive inbox`). */
export function listInbox(root: string, agentId: string): { seq: number; id: string; name: string; done: boolean }[] {
  const p = agentPaths(root, agentId);
  const rows: { seq: number; id: string; name: string; done: boolean }[] = [];
  for (const [dir, done] of [[p.done, true], [p.inbox, false]] as const) {
    for (const name of listDir(dir)) {
      const parsed = parseInboxName(name);
      if (parsed) rows.push({ ...parsed, name, done });
    }
  }
  return rows.sort((a, b) => a.seq - b.seq);
}

/** Reads one inbox entry by name from the pending or the done folder (regular files only). */
export function readInboxEntry(root: string, agentId: string, name: string): HiveMessage | null {
  const p = agentPaths(root, agentId);
  for (const dir of [p.inbox, p.done]) {
    try {
      const parsed = parseMessageText(readRegularText(path.join(dir, name)).text);
      if (parsed.ok) return parsed.message;
    } catch {
      // try the next folder
    }
  }
  return null;
}

/**
 * Moves processed entries (seq ≤ `throughSeq`) to `inbox/.done/` and trims it to `cap`.
 * Not fsynced: an entry whose move is lost reappears with seq ≤ cursor and is moved again.
 */
export function moveToDone(root: string, agentId: string, throughSeq: number, cap = DEFAULT_DONE_CAP): number {
  const p = agentPaths(root, agentId);
  makeDir(p.done);
  assertRealDirectory(p.done, `agents/${agentId}/inbox/.done`);
  let moved = 0;
  for (const name of listDir(p.inbox)) {
    const parsed = parseInboxName(name);
    if (!parsed || parsed.seq > throughSeq) continue;
    try {
      fs.renameSync(path.join(p.inbox, name), path.join(p.done, name));
      moved += 1;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  if (moved > 0) noteAdded(p.done, moved, cap);
  return moved;
}

/** Number of pending entries after `afterSeq` (the inbox depth). */
export function inboxDepth(root: string, agentId: string, afterSeq: number): number {
  let n = 0;
  for (const name of listDir(agentPaths(root, agentId).inbox)) {
    const parsed = parseInboxName(name);
    if (parsed && parsed.seq > afterSeq) n += 1;
  }
  return n;
}
