import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { listInbox, readInboxEntry } from '../queue/inbox.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { GOD_ID, SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { stableId } from '../protocol/ids.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';

/**
 * The human in the loop. Messages routed to god (sent to `god` or `human`, or flagged
 * `needs_human`) that ask something are open questions until answered. An answer is an
 * `inform` from god, `in_reply_to` the question, in the question's conversation, written
 * into god's outbox (the router delivers it to the asker, whose actor then continues).
 * `agents/god/answers.json` remembers what was answered.
 */

export interface Question {
  id: string;
  seq: number;
  from: string;
  act: string;
  subject: string;
  body: string;
  conversation: string;
  created_at: string;
  needs_human: boolean;
  answered: { answer_id: string; at: string } | null;
}

interface AnswersFile {
  answered: Record<string, { answer_id: string; at: string }>;
}

function answersFile(root: string): string {
  return `${agentPaths(root, GOD_ID).dir}/answers.json`;
}

function readAnswers(root: string): AnswersFile {
  try {
    return readJsonFile<AnswersFile>(answersFile(root)) ?? { answered: {} };
  } catch {
    return { answered: {} };
  }
}

/** Is this message in god's inbox something a person should answer? */
export function isQuestion(m: HiveMessage): boolean {
  if (m.from === SYSTEM_SENDER) return false;
  return m.needs_human || m.requires_reply || m.act === 'query' || m.act === 'request' || m.act === 'propose';
}

/**
 * Questions in god's inbox, oldest first; `open` only when asked.
 * @example listQuestions(root, { open: true })
 */
export function listQuestions(root: string, options: { open?: boolean } = {}): Question[] {
  const answers = readAnswers(root).answered;
  const out: Question[] = [];
  for (const row of listInbox(root, GOD_ID)) {
    const m = readInboxEntry(root, GOD_ID, row.name);
    if (!m || !isQuestion(m)) continue;
    const answered = answers[m.id] ?? null;
    if (options.open && answered) continue;
    out.push({
      id: m.id,
      seq: row.seq,
      from: m.from,
      act: m.act,
      subject: m.subject,
      body: m.body,
      conversation: m.conversation,
      created_at: m.created_at,
      needs_human: m.needs_human,
      answered,
    });
  }
  return out;
}

/**
 * Answers a question: writes god's reply durably into god's outbox and records it.
 * Answering twice is refused (E_CONFLICT) unless `again` is set.
 * @example const reply = answerQuestion(root, questionId, 'playful');
 */
export function answerQuestion(root: string, questionId: string, body: string, options: { again?: boolean } = {}): HiveMessage {
  const q = listQuestions(root).find((x) => x.id === questionId);
  if (!q) throw new HiveError('E_NOT_FOUND', `No question ${JSON.stringify(questionId)} in god's inbox; list them with \`hive ask\``);
  const answers = readAnswers(root);
  if (q.answered && !options.again) {
    throw new HiveError('E_CONFLICT', `Question ${questionId} was already answered (${q.answered.answer_id} at ${q.answered.at}); pass --again to answer again`);
  }
  const round = options.again && q.answered ? String(Date.now()) : '';
  const reply = createMessage({
    id: stableId('answer', questionId, round),
    from: GOD_ID,
    to: q.from,
    act: 'inform',
    subject: q.subject ? `Re: ${q.subject}` : '',
    body,
    in_reply_to: questionId,
    conversation: q.conversation,
    requires_reply: false,
  });
  writeOutbox(root, [reply]);
  answers.answered[questionId] = { answer_id: reply.id, at: new Date().toISOString() };
  writeJsonAtomic(answersFile(root), answers);
  appendEvent(root, { type: 'question.answered', agent: q.from, question: questionId, answer: reply.id });
  return reply;
}
