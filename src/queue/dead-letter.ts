import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { hivePaths } from '../layout/paths.ts';
import { fsyncDir, writeFileAtomic } from '../fs/atomic.ts';
import { appendEvent } from '../log/event-log.ts';
import { makeDir } from '../fs/modes.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * The dead-letter folder: `dead-letter/<stamp>-<name>` plus `<stamp>-<name>.reason.json`
 * with `{ error, source, at }`. Nothing in it is ever deleted by Hive.
 *
 * Order of steps (a crash between any two leaves the item in exactly one place):
 *   1. write the reason file durably
 *   2. rename the rejected file into dead-letter/ (or write it, for in-memory items)
 *   3. fsync dead-letter/
 * A reason file without its item means the crash hit between 1 and 2: the item is
 * still at its source and will be rejected again, with a second reason file.
 */

export interface DeadLetterReason {
  /** What was wrong, in words. */
  error: string;
  /** Where the item came from: a path relative to the hive root, or a description. */
  source: string;
  /** A stable error code when there is one (E_BAD_MESSAGE, E_UNKNOWN_AGENT, ...). */
  code?: string;
  /** Extra detail: the recipient, the hop count, ... */
  [key: string]: unknown;
}

export interface DeadLetterRecord {
  name: string;
  file: string;
  reasonFile: string;
}

function deadLetterName(base: string): string {
  const safe = base.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120) || 'item';
  return `${Date.now()}-${randomBytes(3).toString('hex')}-${safe}`;
}

function record(root: string, name: string, reason: DeadLetterReason): DeadLetterRecord {
  const dir = hivePaths(root).deadLetter;
  const reasonFile = path.join(dir, `${name}.reason.json`);
  writeFileAtomic(reasonFile, `${JSON.stringify({ ...reason, at: new Date().toISOString() }, null, 2)}\n`);
  return { name, file: path.join(dir, name), reasonFile };
}

/**
 * Moves a rejected file into dead-letter/ with its reason, and logs it.
 * @example deadLetterFile(root, '/hive/agents/a/outbox/x.json', { error: 'not JSON', source: 'agents/a/outbox/x.json' })
 */
export function deadLetterFile(root: string, file: string, reason: DeadLetterReason): DeadLetterRecord {
  const dir = hivePaths(root).deadLetter;
  makeDir(dir);
  const rec = record(root, deadLetterName(path.basename(file)), reason);
  crashPoint('dead-letter.after-reason');
  fs.renameSync(file, rec.file);
  fsyncDir(dir);
  appendEvent(root, { type: 'message.dead-lettered', file: rec.name, ...reason });
  return rec;
}

/**
 * Writes an in-memory item (a message that was never a file of its own) into dead-letter/.
 * `exactName`: use `baseName` as is and do nothing if it is already there (idempotent
 * for callers that may repeat after a crash).
 */
export function deadLetterData(
  root: string,
  baseName: string,
  data: string,
  reason: DeadLetterReason,
  options: { exactName?: boolean } = {},
): DeadLetterRecord {
  const dir = hivePaths(root).deadLetter;
  makeDir(dir);
  if (options.exactName && fs.existsSync(path.join(dir, baseName))) {
    return { name: baseName, file: path.join(dir, baseName), reasonFile: path.join(dir, `${baseName}.reason.json`) };
  }
  const rec = record(root, options.exactName ? baseName : deadLetterName(baseName), reason);
  writeFileAtomic(rec.file, data);
  appendEvent(root, { type: 'message.dead-lettered', file: rec.name, ...reason });
  return rec;
}

/** Relative path of a file inside the hive, for reason records and logs. */
export function relativeToHive(root: string, file: string): string {
  return path.relative(hivePaths(root).root, file);
}

export interface DeadLetterEntry {
  name: string;
  reason: (DeadLetterReason & { at: string }) | null;
}

/** Lists dead letters with their reasons, oldest first. */
export function listDeadLetters(root: string): DeadLetterEntry[] {
  const dir = hivePaths(root).deadLetter;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.startsWith('.') && !n.endsWith('.reason.json'))
    .sort()
    .map((name) => ({ name, reason: deadLetterReason(root, name) }));
}

/** A dead letter's reason record, or null (a crash cut it short, or it is unreadable). */
export function deadLetterReason(root: string, name: string): DeadLetterEntry['reason'] {
  try {
    return JSON.parse(readRegularFile(path.join(hivePaths(root).deadLetter, `${name}.reason.json`), 'utf8')) as DeadLetterEntry['reason'];
  } catch {
    return null;
  }
}
