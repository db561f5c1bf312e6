import path from 'node:path';
import type { Delivery } from '../protocol/worker.ts';
import { GOD_ID, SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { hivePaths } from '../layout/paths.ts';
import { appendEvent } from '../log/event-log.ts';
import { appendLines } from '../fs/append-lines.ts';

/**
 * `questions.jsonl`: the ledger of questions put to the people (`god`) and their
 * answers, one JSON object a line. Small and significant, so the audit trail keeps it
 * (god's inbox itself is a queue and stays out of git).
 */

export const QUESTION_ACTS = new Set(['query', 'request', 'propose']);

export function questionsFile(root: string): string {
  return path.join(hivePaths(root).root, 'questions.jsonl');
}

/** A delivery into god's inbox that asks the people something (not a runtime notice). */
export function isQuestion(d: Pick<Delivery, 'agent' | 'from' | 'act' | 'needs_human'>): boolean {
  return d.agent === GOD_ID && d.from !== SYSTEM_SENDER && d.from !== GOD_ID && (d.needs_human || QUESTION_ACTS.has(d.act));
}

/** A delivery of god's reply to something. */
export function isAnswer(d: Pick<Delivery, 'from' | 'in_reply_to'>): boolean {
  return d.from === GOD_ID && d.in_reply_to !== null;
}

function append(root: string, line: Record<string, unknown>): void {
  try {
    appendLines(questionsFile(root), `${JSON.stringify(line)}\n`);
  } catch {
    // best-effort, like the event log
  }
}

export function recordQuestion(root: string, d: Delivery): void {
  append(root, { type: 'question', id: d.id, from: d.from, subject: d.subject, body: d.body, conversation: d.conversation, at: new Date().toISOString() });
  appendEvent(root, { type: 'question.asked', agent: d.from, id: d.id, subject: d.subject });
}

export function recordAnswer(root: string, d: Delivery): void {
  // (The event log's `question.answered` line is written where the answer is given.)
  append(root, { type: 'answer', id: d.id, in_reply_to: d.in_reply_to, to: d.agent, body: d.body, at: new Date().toISOString() });
}
