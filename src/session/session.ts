import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { readJsonFile, writeFileAtomic, writeJsonAtomic } from '../fs/atomic.ts';
import { appendEvent } from '../log/event-log.ts';
import { JsonlJournal, readJsonl } from './journal.ts';
import { currentSessionFile, isSessionKey, sessionPaths } from './paths.ts';
import type { ChatMessage, ConversationView, RestoreMode, SessionCaps, TranscriptEvent } from './types.ts';
import { makeDir } from '../fs/modes.ts';
import { readStateFile } from '../agent/state-store.ts';

/**
 * One agent's live conversation, under a session key (a GUID that survives restarts):
 *
 *   history.json        what the brain sees; written then renamed at each turn end,
 *                       skipped (with a log line) above `historyBytes`
 *   transcript.jsonl    append-only journal of every event of a turn (inputs, prompts,
 *                       outputs, stderr, errors, hook events)
 *   conversation.jsonl  plain-text turns, bounded; the source of a tail brief
 *   background.json     briefing armed for the next turn (tail brief, amnesia notice,
 *                       imported snapshots); consumed by that turn
 *
 * The restore cascade (MandoCode's): full fidelity (history.json) → tail brief (the newest
 * turns of conversation.jsonl, up to a character budget) → honest amnesia (a transcript
 * exists but no memory of it: the brain is told so) → new.
 */

export interface CurrentSession {
  key: string;
  started_at: string;
  /** The agent's last commit when this conversation began (see Session.historyCommit). */
  commit?: number;
}

export interface ConversationTurn {
  at: string;
  role: 'user' | 'assistant';
  text: string;
}

/** The agent's live session key, created on first use. */
export function currentSession(root: string, agentId: string): CurrentSession {
  const file = currentSessionFile(root, agentId);
  try {
    const c = readJsonFile<CurrentSession>(file);
    if (c && isSessionKey(c.key)) return c;
  } catch {
    // unreadable: start a new session (the old files are swept as orphans)
  }
  return startNewSession(root, agentId);
}

/** Makes a fresh session the agent's live one (after clear, archive, or a provider switch). */
export function startNewSession(root: string, agentId: string, key: string = randomUUID()): CurrentSession {
  let commit = 0;
  try {
    commit = readStateFile(root, agentId)?.commit ?? 0;
  } catch {
    commit = 0;
  }
  const current: CurrentSession = { key, started_at: new Date().toISOString(), commit };
  makeDir(sessionPaths(root, agentId, key).dir);
  writeJsonAtomic(currentSessionFile(root, agentId), current);
  return current;
}

/** Decides the restore path from what is on disk. Pure apart from reading. */
export function restoreConversation(root: string, agentId: string, key: string, caps: SessionCaps): ConversationView {
  const p = sessionPaths(root, agentId, key);
  const background = readBackground(p.background);
  try {
    const h = readJsonFile<{ key?: string; messages?: ChatMessage[]; commit?: number }>(p.history);
    if (h && h.key === key && Array.isArray(h.messages)) {
      return { key, mode: 'full', history: h.messages, background, ...(Number.isInteger(h.commit) ? { commit: h.commit! } : {}) };
    }
  } catch {
    // corrupt history.json: fall through to the tail brief
  }
  // Otherwise (missing, corrupt, or a marker left when it grew past its cap): the tail brief.
  const turns = readJsonl<ConversationTurn>(p.conversation);
  if (turns.length > 0) {
    const brief: string[] = [];
    let chars = 0;
    for (let i = turns.length - 1; i >= 0; i--) {
      const line = `${turns[i]!.role}: ${turns[i]!.text}`;
      if (chars + line.length > caps.tailBriefChars && brief.length > 0) break;
      brief.unshift(line.slice(0, caps.tailBriefChars));
      chars += line.length;
    }
    const note =
      `Your earlier conversation could not be restored in full. Here are its last ${brief.length} of ${turns.length} turns, ` +
      `as a brief: you are being told about them, you do not remember them.\n${brief.join('\n')}`;
    return { key, mode: 'tail', history: [], background: [note, ...background] };
  }
  // Amnesia only when a turn was there to forget: a transcript of restores alone (no input
  // recorded) is a conversation that has not begun.
  const events = readJsonl<TranscriptEvent>(p.transcript);
  if (events.some((e) => e.kind === 'input')) {
    const note =
      `A transcript of an earlier conversation of yours exists (${events.length} events), but your memory of it was lost. ` +
      `Do not pretend to remember it; ask if you need something from it.`;
    return { key, mode: 'amnesia', history: [], background: [note, ...background] };
  }
  return { key, mode: 'new', history: [], background };
}

function readBackground(file: string): string[] {
  try {
    const b = readJsonFile<{ items?: unknown }>(file);
    return Array.isArray(b?.items) ? (b!.items as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** Arms background for an agent's next turn (kept until a turn consumes it). */
export function armBackground(root: string, agentId: string, key: string, text: string): void {
  const p = sessionPaths(root, agentId, key);
  makeDir(p.dir);
  writeJsonAtomic(p.background, { items: [...readBackground(p.background), text] });
}

/** The live conversation of an agent actor (worker side). */
export class Session {
  private history: ChatMessage[];
  private readonly transcript: JsonlJournal<TranscriptEvent & { at: string }>;
  private readonly conversation: JsonlJournal<ConversationTurn>;
  readonly mode: RestoreMode;
  /** history.json holds the skipped marker, not messages. */
  private historyStale = false;
  /**
   * The agent commit the history is complete up to (history.json's `commit`): a commit
   * after it whose turn the history lacks was cut off by a crash between the two, and is
   * added back from the commit record (see `catchUp`). Null when not known.
   */
  historyCommit: number | null;

  /** `baseCommit`: the agent's last commit when this conversation began (CurrentSession.commit). */
  constructor(
    private readonly root: string,
    private readonly agentId: string,
    readonly key: string,
    private readonly caps: SessionCaps,
    baseCommit: number | null = null,
  ) {
    const p = sessionPaths(root, agentId, key);
    makeDir(p.dir);
    const view = restoreConversation(root, agentId, key, caps);
    this.mode = view.mode;
    this.history = view.history;
    // A conversation with no history yet is complete up to where it began.
    this.historyCommit = view.commit ?? (view.mode === 'new' ? baseCommit : null);
    // The briefing is kept on disk until a turn consumes it: it survives a crash before
    // that turn, and snapshots imported while the agent runs join it.
    if (view.background.length > 0) writeJsonAtomic(p.background, { items: view.background }, { durable: false });
    this.transcript = new JsonlJournal(p.transcript, caps.transcriptLines);
    this.conversation = new JsonlJournal(p.conversation, caps.conversationTurns);
    this.record({ kind: 'restore', mode: view.mode, history: view.history.length });
    appendEvent(root, { type: 'session.restored', agent: agentId, session: key, mode: view.mode });
  }

  view(): ConversationView {
    const background = readBackground(sessionPaths(this.root, this.agentId, this.key).background);
    return { key: this.key, mode: this.mode, history: this.history, background };
  }

  /** Appends events to the transcript (not fsynced: a journal for people, lost at most in the crash). */
  record(...events: TranscriptEvent[]): void {
    const at = new Date().toISOString();
    this.transcript.append(events.map((e) => ({ at, ...e })));
  }

  /**
   * At start: turns of commits after `historyCommit` (cut off by a crash after their commit,
   * before their history was written) are added from the commit record. Returns how many.
   */
  catchUp(commit: number, turns: { user: string; assistant: string | null }[]): number {
    if (this.historyCommit === null || this.historyCommit >= commit || turns.length === 0) return 0;
    for (const t of turns) this.endTurn(t.user, t.assistant, commit);
    this.record({ kind: 'restore', mode: 'caught-up', history: this.history.length });
    appendEvent(this.root, { type: 'session.caught-up', agent: this.agentId, session: this.key, commit, turns: turns.length });
    return turns.length;
  }

  private historyJson(): string {
    return JSON.stringify({ version: 1, key: this.key, messages: this.history, ...(this.historyCommit !== null ? { commit: this.historyCommit } : {}) });
  }

  /**
   * Turn end: history grows, the plain-text turns are logged, armed background is consumed.
   * `commit`: the agent commit that holds the turn (history.json records it).
   */
  endTurn(user: string, assistant: string | null, commit: number | null = null): void {
    const p = sessionPaths(this.root, this.agentId, this.key);
    const at = new Date().toISOString();
    this.history = [...this.history, { role: 'user', content: user }, ...(assistant ? [{ role: 'assistant' as const, content: assistant }] : [])];
    this.conversation.append([{ at, role: 'user', text: user }, ...(assistant ? [{ at, role: 'assistant' as const, text: assistant }] : [])]);
    if (commit !== null) this.historyCommit = commit;
    const json = this.historyJson();
    const bytes = Buffer.byteLength(json);
    if (bytes > this.caps.historyBytes) {
      appendEvent(this.root, { type: 'session.history-skipped', agent: this.agentId, session: this.key, bytes, cap: this.caps.historyBytes });
      // The history on disk is now behind: replace it by a marker once, so a restore does not
      // take the older copy for full fidelity (it falls back to the tail brief).
      if (!this.historyStale) {
        writeFileAtomic(p.history, JSON.stringify({ version: 1, key: this.key, skipped: { bytes, cap: this.caps.historyBytes, at } }), { durable: false });
        this.historyStale = true;
      }
    } else {
      this.historyStale = false;
      writeFileAtomic(p.history, json, { durable: false }); // exactly the bytes measured against the cap
    }
    fs.rmSync(p.background, { force: true });
  }
}
