import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, writeFileAtomic, writeJsonAtomic } from '../fs/atomic.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { HiveError } from '../errors.ts';
import { appendEvent } from '../log/event-log.ts';
import { currentSession } from './session.ts';
import { sessionPaths } from './paths.ts';
import { createSnapshot, importSnapshot, type Snapshot } from './snapshots.ts';
import { makeDir } from '../fs/modes.ts';

/**
 * Provider or model switches. The conversation before the switch is archived; the offer
 * in `agents/<id>/sessions/switch-offer.json` lets a person choose memory (re-import the
 * history verbatim: the same conversation continues under the new model) or knowledge
 * (a snapshot recap armed as background), MandoCode's two sides of the line.
 */

export interface SwitchOffer {
  from: string;
  to: string;
  archived: string;
  at?: string;
}

/** What identifies a brain's "mind": provider kind plus model or command. */
export function brainIdentity(brain: unknown): string {
  const b = (brain ?? {}) as Record<string, unknown>;
  const detail = b.model ?? b.command ?? b.module ?? '';
  return detail ? `${String(b.kind)}:${String(detail)}` : String(b.kind);
}

function offerFile(root: string, agentId: string): string {
  return path.join(agentPaths(root, agentId).sessions, 'switch-offer.json');
}

export function writeSwitchOffer(root: string, agentId: string, offer: SwitchOffer): void {
  writeJsonAtomic(offerFile(root, agentId), { ...offer, at: new Date().toISOString() });
}

export function readSwitchOffer(root: string, agentId: string): SwitchOffer | null {
  try {
    return readJsonFile<SwitchOffer>(offerFile(root, agentId)) ?? null;
  } catch {
    return null;
  }
}

/** Keep memory: the archived history and plain-text turns become the live session's. */
export function acceptSwitchKeepMemory(root: string, agentId: string): SwitchOffer {
  const offer = readSwitchOffer(root, agentId);
  if (!offer) throw new HiveError('E_NOT_FOUND', `Agent "${agentId}" has no pending provider-switch offer`);
  const from = sessionPaths(root, agentId, offer.archived);
  const to = sessionPaths(root, agentId, currentSession(root, agentId).key);
  makeDir(to.dir);
  let history: { messages?: unknown } | undefined;
  try {
    history = readJsonFile<{ messages?: unknown }>(from.history);
  } catch {
    history = undefined; // corrupt: the copied turns give a tail brief instead
  }
  // A history skipped over its cap is only a marker: then the copied turns give a tail brief.
  if (Array.isArray(history?.messages)) writeJsonAtomic(to.history, { version: 1, key: currentSession(root, agentId).key, messages: history.messages });
  // Read regular-only and written by rename: a FIFO there never blocks the supervisor, a
  // symlink is neither read through nor written through.
  let conversation: Buffer | null = null;
  try {
    conversation = readRegularFile(from.conversation);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (conversation) writeFileAtomic(to.conversation, conversation);
  fs.rmSync(offerFile(root, agentId), { force: true });
  appendEvent(root, { type: 'session.switch-kept', agent: agentId, from: offer.archived });
  return offer;
}

/** Snapshot: the archived conversation is distilled and armed as background. */
export async function acceptSwitchSnapshot(root: string, agentId: string, name: string, summarize?: (text: string) => Promise<string>): Promise<Snapshot> {
  const offer = readSwitchOffer(root, agentId);
  if (!offer) throw new HiveError('E_NOT_FOUND', `Agent "${agentId}" has no pending provider-switch offer`);
  const snap = await createSnapshot(root, agentId, name, { session: offer.archived, ...(summarize ? { summarize } : {}) });
  importSnapshot(root, name, agentId);
  fs.rmSync(offerFile(root, agentId), { force: true });
  return snap;
}
