import fs from 'node:fs';
import path from 'node:path';
import { hivePaths } from '../layout/paths.ts';
import { fsyncDir, writeFileAtomic } from '../fs/atomic.ts';
import { makeDir } from '../fs/modes.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { createMessage, parseMessageText, type HiveMessage } from '../protocol/message.ts';
import { stableId } from '../protocol/ids.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { writeOutbox } from './outbox.ts';
import { deadLetterReason, listDeadLetters, type DeadLetterEntry } from './dead-letter.ts';
import { agentPaths } from '../layout/paths.ts';

/**
 * What an operator does with dead letters (`hive dead-letter`, the API, the inspector): look
 * at one, retry it, or discard it. Nothing is deleted: a retried or discarded item moves to
 * `dead-letter/.archive/` with its reason, which records what became of it.
 *
 * Retry re-sends the message under a new id (`retry-…`, derived from the dead letter's name,
 * so a retry repeated after a crash is the same message and delivered once): the recipient's
 * idempotency check still knows the old id, which would swallow a plain copy. Order of steps:
 *   1. write the new message durably into its sender's outbox (the router validates and
 *      routes it like any other)
 *   2. record the resolution in the reason file, then move both into .archive/ and flush
 * A crash between 1 and 2 leaves the dead letter in place; retrying it again writes the same
 * id, which delivery drops as a duplicate.
 */

export interface DeadLetterDetail extends DeadLetterEntry {
  /** The item's text (cut at 64 KiB). */
  content: string;
  /** The message it holds, or why it holds none. */
  message: HiveMessage | null;
  invalid: string | null;
}

function archiveDir(root: string): string {
  return path.join(hivePaths(root).deadLetter, '.archive');
}

/** A dead letter's name as given by an operator: a plain name in dead-letter/, nothing else. */
function checkedName(root: string, name: string): string {
  if (!name || name.includes('/') || name.includes('\0') || name.startsWith('.') || name.endsWith('.reason.json')) {
    throw new HiveError('E_BAD_ARGS', `Not a dead letter name: ${JSON.stringify(name)} (hive dead-letter list shows them)`);
  }
  if (!fs.existsSync(path.join(hivePaths(root).deadLetter, name))) {
    throw new HiveError('E_NOT_FOUND', `No dead letter ${JSON.stringify(name)} in ${hivePaths(root).deadLetter} (hive dead-letter list shows them)`);
  }
  return name;
}

/** One dead letter with its content and, when it holds one, its message. */
export function showDeadLetter(root: string, name: string): DeadLetterDetail {
  checkedName(root, name);
  const entry: DeadLetterEntry = { name, reason: deadLetterReason(root, name) };
  let content = '';
  let invalid: string | null = null;
  let message: HiveMessage | null = null;
  try {
    content = readRegularFile(path.join(hivePaths(root).deadLetter, name), 'utf8').slice(0, 65_536);
    const parsed = parseMessageText(content);
    if (parsed.ok) message = parsed.message;
    else invalid = parsed.error.message;
  } catch (err) {
    invalid = (err as Error).message;
  }
  return { ...entry, content, message, invalid };
}

/**
 * Retries dead letters: each is sent again as a new message from its sender (see above).
 * One that holds no valid message is refused with the reason (fix the file first).
 * Returns the new message of each.
 */
export function retryDeadLetters(root: string, names: string[]): { name: string; message: HiveMessage }[] {
  const out: { name: string; message: HiveMessage }[] = [];
  for (const name of names) {
    const d = showDeadLetter(root, name);
    if (!d.message) throw new HiveError('E_BAD_MESSAGE', `Dead letter ${name} holds no valid message, so it cannot be retried: ${d.invalid}`);
    const m = d.message;
    if (!isAgentId(m.from) || !fs.existsSync(agentPaths(root, m.from).outbox)) {
      throw new HiveError('E_UNKNOWN_AGENT', `Dead letter ${name}: its sender "${m.from}" has no outbox in ${root}`);
    }
    const retry = createMessage({ ...m, id: stableId('retry', name), hops: 0, created_at: new Date().toISOString() });
    writeOutbox(root, [retry]);
    archive(root, name, { resolution: 'retried', as: retry.id });
    appendEvent(root, { type: 'dead-letter.retried', file: name, id: m.id, as: retry.id, to: m.to });
    out.push({ name, message: retry });
  }
  return out;
}

/** Discards dead letters: moved to the archive with the resolution, never deleted. */
export function discardDeadLetters(root: string, names: string[]): void {
  for (const name of names) {
    checkedName(root, name);
    archive(root, name, { resolution: 'discarded' });
    appendEvent(root, { type: 'dead-letter.discarded', file: name });
  }
}

/** Dead letters whose reason carries `code` (all when omitted): for `retry --all --code C`. */
export function deadLetterNames(root: string, code?: string): string[] {
  return listDeadLetters(root)
    .filter((d) => code === undefined || d.reason?.code === code)
    .map((d) => d.name);
}

function archive(root: string, name: string, resolution: Record<string, unknown>): void {
  const dir = hivePaths(root).deadLetter;
  const to = archiveDir(root);
  makeDir(to);
  const reasonFile = path.join(dir, `${name}.reason.json`);
  // No reason file (a crash cut it short): the archive records the resolution alone.
  const reason = deadLetterReason(root, name) ?? {};
  writeFileAtomic(path.join(to, `${name}.reason.json`), `${JSON.stringify({ ...reason, ...resolution, resolved_at: new Date().toISOString() }, null, 2)}\n`);
  fs.renameSync(path.join(dir, name), path.join(to, name));
  fs.rmSync(reasonFile, { force: true });
  fsyncDir(to);
  fsyncDir(dir);
}
