import { agentPaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { listInbox, type InboxRow } from '../queue/inbox.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { GOD_ID, SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { stableId } from '../protocol/ids.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { answersByQuestion, recordAnswer } from './ledger.ts';

/**
 * The human in the loop (docs/architecture.md, "People in the loop"). A message delivered
 * to god that asks something (`isQuestion`: the one rule, used by `hive ask`, the
 * inspector, the API and the ledger) is an open question until answered. An answer is an
 * `inform` from god, `in_reply_to` the question, in the question's conversation, written
 * into god's outbox (the router delivers it to the asker, whose actor then continues); what
 * was answered is kept in one place, the ledger `questions.jsonl` (ledger.ts).
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
  /** open until answered or withdrawn by its asker. */
  state: 'open' | 'answered' | 'withdrawn';
  answered: { answer_id: string; at: string } | null;
  withdrawn: { id: string; at: string; reason: string } | null;
}

/**
 * A withdrawal: a `done` from the asker to god, `in_reply_to` the question, or with no
 * `in_reply_to` for every question it asked earlier in that conversation (`ctx.withdraw`).
 */
function isWithdrawal(m: HiveMessage): boolean {
  return m.act === 'done' && m.from !== GOD_ID && m.from !== SYSTEM_SENDER && !isQuestion(m);
}

/** Acts that ask for something whether or not they are flagged. */
export const QUESTION_ACTS: ReadonlySet<string> = new Set(['query', 'request', 'propose']);

/**
 * Is this message, delivered to god, something a person should answer? Flagged for a person
 * (`needs_human`), waiting for a reply (`requires_reply`), or an act that asks; never a
 * runtime notice or god's own message.
 */
export function isQuestion(m: { from: string; act: string; needs_human: boolean; requires_reply: boolean }): boolean {
  if (m.from === SYSTEM_SENDER || m.from === GOD_ID) return false;
  return m.needs_human || m.requires_reply || QUESTION_ACTS.has(m.act);
}

/** A message from god that replies to something (an answer, as the ledger sees deliveries). */
export function isAnswer(m: { from: string; in_reply_to: string | null }): boolean {
  return m.from === GOD_ID && m.in_reply_to !== null;
}

/** Answered questions: the ledger, and `agents/god/answers.json` of hives from before it was the store (read only). */
function answered(root: string): Map<string, { answer_id: string; at: string }> {
  const out = new Map<string, { answer_id: string; at: string }>();
  try {
    const legacy = readJsonFile<{ answered?: Record<string, { answer_id: string; at: string }> }>(`${agentPaths(root, GOD_ID).dir}/answers.json`);
    for (const [q, a] of Object.entries(legacy?.answered ?? {})) out.set(q, a);
  } catch {
    // unreadable: the ledger is the store
  }
  for (const [q, a] of answersByQuestion(root)) out.set(q, { answer_id: a.id, at: a.at });
  return out;
}

/**
 * Questions in god's inbox, oldest first; `open` only when asked.
 * @example listQuestions(root, { open: true })
 */
export function listQuestions(root: string, options: { open?: boolean; inbox?: InboxRow[] } = {}): Question[] {
  const answers = answered(root);
  const out: Question[] = [];
  // `inbox`: god's inbox as read through the transport (cluster mode); else the local log.
  const rows = (options.inbox ?? listInbox(root, GOD_ID)).map((row) => ({ row, m: row.message }));
  const withdrawals = rows.filter((r) => r.m && isWithdrawal(r.m)) as { row: (typeof rows)[number]['row']; m: HiveMessage }[];
  const seen = new Set<string>();
  for (const { row, m } of rows) {
    if (!m || !isQuestion(m)) continue;
    // A question is its id: a second delivery of it (a delivery bug, or a hive from before the
    // dedupe) is the same question, listed once, so answering each listed one answers each once.
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    const answer = answers.get(m.id) ?? null;
    const w = withdrawals.find(
      (x) => x.m.from === m.from && (x.m.in_reply_to === m.id || (x.m.in_reply_to === null && x.m.conversation === m.conversation && x.row.seq > row.seq)),
    );
    const withdrawn = w && !answer ? { id: w.m.id, at: w.m.created_at, reason: w.m.body } : null;
    if (options.open && (answer || withdrawn)) continue;
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
      state: answer ? 'answered' : withdrawn ? 'withdrawn' : 'open',
      answered: answer,
      withdrawn,
    });
  }
  return out;
}

/**
 * Answers a question: writes god's reply durably into god's outbox, then records it in the
 * ledger. A crash in between leaves it open; answering again writes the same reply id, which
 * delivery drops as a duplicate, so the asker hears it once.
 * Answering twice is refused (E_CONFLICT) unless `again` is set.
 * @example const reply = answerQuestion(root, questionId, 'playful');
 */
export function answerQuestion(root: string, questionId: string, body: string, options: { again?: boolean; inbox?: InboxRow[] } = {}): HiveMessage {
  const q = listQuestions(root, options.inbox ? { inbox: options.inbox } : {}).find((x) => x.id === questionId);
  if (!q) throw new HiveError('E_NOT_FOUND', `No question ${JSON.stringify(questionId)} in god's inbox; list them with \`hive ask\``);
  if (q.withdrawn) {
    throw new HiveError('E_CONFLICT', `Question ${questionId} was withdrawn by ${q.from} at ${q.withdrawn.at} (${q.withdrawn.reason}); no answer was sent`);
  }
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
  recordAnswer(root, { id: reply.id, in_reply_to: questionId, to: q.from, body });
  appendEvent(root, { type: 'question.answered', agent: q.from, question: questionId, answer: reply.id });
  return reply;
}
