import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { fsyncDir, writeFileAtomic } from '../fs/atomic.ts';
import { entryKind, isRealDirectory, listEntries, readRegularText } from '../fs/regular-file.ts';
import { parseMessageText, type HiveMessage } from '../protocol/message.ts';
import { MarkerFile } from '../fs/marker.ts';
import { appendEvent } from '../log/event-log.ts';
import { deadLetterData } from './dead-letter.ts';
import { encodeEntryLine, listSegments, readSynced, segmentName, SYNCED_NAME } from './inbox-log.ts';

/**
 * One-way migration of an inbox written by Hive before the inbox logs: one file per
 * message (`inbox/<12-digit seq>-<id>.json`, handled ones in `inbox/.done/`), a lock folder
 * and a `.head` token. Run at start, before any router or agent, for every agent.
 *
 *   1. read every entry file (pending and done), keeping each seq
 *   2. write each run of consecutive seqs as one segment named by its first seq (atomic:
 *      temp, fsync, rename), skipping a segment that exists (a migration cut short),
 *      then fsync the folder and write `.synced`
 *   3. remove the entry files, `.done/`, the lock and `.head`
 * A file that is not a valid entry is dead-lettered with its reason, as the old reader did.
 */

const LEGACY_NAME = /^(\d{12})-([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.json$/;
const LEGACY_LEFTOVERS = ['.done', '.lock', '.lock.owner.json', '.head'];

interface LegacyEntry {
  seq: number;
  message: HiveMessage;
  file: string;
}

/** True when the inbox still has files of the old layout. */
export function hasLegacyInbox(root: string, agentId: string): boolean {
  const dir = agentPaths(root, agentId).inbox;
  if (!isRealDirectory(dir)) return false;
  return holdsLegacyNames(fs.readdirSync(dir));
}

/** True when an inbox folder listing names anything of the file-per-message layout. */
export function holdsLegacyNames(names: string[]): boolean {
  return names.some((n) => LEGACY_NAME.test(n) || LEGACY_LEFTOVERS.includes(n) || n.startsWith('.lock.intent-'));
}

/** Migrates one agent's inbox; returns how many entries were moved into the log. */
export function migrateInbox(root: string, agentId: string): number {
  if (!hasLegacyInbox(root, agentId)) return 0;
  const dir = agentPaths(root, agentId).inbox;
  const doneDir = path.join(dir, '.done');
  const found: LegacyEntry[] = [];
  const files: string[] = [];
  for (const folder of [doneDir, dir]) {
    if (!isRealDirectory(folder)) continue;
    for (const d of listEntries(folder)) {
      const m = LEGACY_NAME.exec(d.name);
      if (!m) continue;
      const file = path.join(folder, d.name);
      files.push(file);
      const where = `agents/${agentId}/inbox/${folder === doneDir ? '.done/' : ''}${d.name}`;
      try {
        const text = readRegularText(file, where, entryKind(d)).text;
        const parsed = parseMessageText(text);
        if (parsed.ok && parsed.message.id === m[2]) {
          found.push({ seq: Number(m[1]), message: parsed.message, file });
          continue;
        }
        const error = parsed.ok ? `holds message id "${parsed.message.id}", not "${m[2]}"` : parsed.error.message;
        deadLetterData(root, `migrated-${agentId}-${d.name}`, text, { error: `${where}: ${error}`, code: 'E_BAD_MESSAGE', source: where }, { exactName: true });
      } catch (err) {
        deadLetterData(root, `migrated-${agentId}-${d.name}`, '', { error: `${where}: ${(err as Error).message}`, code: 'E_NOT_REGULAR', source: where }, { exactName: true });
      }
    }
  }
  found.sort((a, b) => a.seq - b.seq);
  const existing = new Set(listSegments(dir).segments.map((s) => s.first));
  let last = readSynced(dir);
  let run: LegacyEntry[] = [];
  const flush = () => {
    if (run.length === 0) return;
    const first = run[0]!.seq;
    if (!existing.has(first)) writeFileAtomic(path.join(dir, segmentName(first)), run.map((e) => encodeEntryLine(e.seq, e.message)).join(''));
    last = Math.max(last, run.at(-1)!.seq);
    run = [];
  };
  for (const e of found) {
    const prev = run.at(-1);
    if (prev && e.seq === prev.seq) continue; // the same seq in .done/ and inbox/: one copy
    if (prev && e.seq !== prev.seq + 1) flush();
    run.push(e);
  }
  flush();
  fsyncDir(dir);
  const marker = new MarkerFile(path.join(dir, SYNCED_NAME), 64);
  marker.write({ seq: last });
  marker.close();
  for (const f of files) fs.rmSync(f, { force: true });
  for (const n of fs.readdirSync(dir)) {
    if (LEGACY_LEFTOVERS.includes(n) || n.startsWith('.lock.intent-')) fs.rmSync(path.join(dir, n), { recursive: true, force: true });
  }
  appendEvent(root, { type: 'inbox.migrated', agent: agentId, entries: found.length, last });
  return found.length;
}
