import path from 'node:path';
import type { Delivery } from '../protocol/worker.ts';
import { hivePaths } from '../layout/paths.ts';
import { appendEvent } from '../log/event-log.ts';
import { appendLines } from '../fs/append-lines.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * `questions.jsonl`: the ledger of questions put to the people (`god`) and their answers,
 * one JSON object a line, and the one store of what was answered (docs/architecture.md,
 * "People in the loop"). A question line is written when the question is delivered to god;
 * an answer line, flushed, when the answer is given. Small and significant, so the audit
 * trail keeps it (god's inbox itself is a queue and stays out of git).
 */

export function questionsFile(root: string): string {
  return path.join(hivePaths(root).root, 'questions.jsonl');
}

export interface AnswerRecord {
  type: 'answer';
  /** The answer message's id. */
  id: string;
  in_reply_to: string;
  to: string;
  body: string;
  at: string;
}

/** Records a question delivered to god (best effort, like the event log: the inbox holds the question itself). */
export function recordQuestion(root: string, d: Delivery): void {
  try {
    appendLines(questionsFile(root), `${JSON.stringify({ type: 'question', id: d.id, from: d.from, subject: d.subject, body: d.body, conversation: d.conversation, at: new Date().toISOString() })}\n`);
  } catch {
    // best-effort
  }
  appendEvent(root, { type: 'question.asked', agent: d.from, id: d.id, subject: d.subject });
}

/** Records an answer, flushed: once this returns the question counts as answered. */
export function recordAnswer(root: string, answer: Omit<AnswerRecord, 'type' | 'at'>): AnswerRecord {
  const record: AnswerRecord = { type: 'answer', ...answer, at: new Date().toISOString() };
  appendLines(questionsFile(root), `${JSON.stringify(record)}\n`, { durable: true });
  return record;
}

/** The latest answer to each question, by question id (a torn or foreign line is skipped). */
export function answersByQuestion(root: string): Map<string, AnswerRecord> {
  const out = new Map<string, AnswerRecord>();
  let text: string;
  try {
    text = readRegularFile(questionsFile(root), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out; // nothing asked yet
    throw err;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    let r: Partial<AnswerRecord>;
    try {
      r = JSON.parse(line) as Partial<AnswerRecord>;
    } catch {
      continue;
    }
    if (r.type === 'answer' && typeof r.in_reply_to === 'string' && typeof r.id === 'string' && typeof r.at === 'string') out.set(r.in_reply_to, r as AnswerRecord);
  }
  return out;
}
