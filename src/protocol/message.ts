// zod/mini: the same schema engine, tree-shakable. Every worker validates messages; the
// classic API would add an order of magnitude more code to parse to every worker's start.
import * as z from 'zod/mini';
import { regexes } from 'zod/v4/core';
import { HiveError, describeValue } from '../errors.ts';
import { AGENT_ID_PATTERN, BROADCAST, GOD_ID, HUMAN_ALIAS, isAgentId } from './agent-id.ts';
import { MESSAGE_ID_PATTERN, newId } from './ids.ts';

/** Speech acts a message can carry (docs/architecture.md, "The message contract"). */
export const ACTS = ['request', 'inform', 'propose', 'query', 'agree', 'refuse', 'done'] as const;
export type Act = (typeof ACTS)[number];

/** Acts that expect an answer unless the sender says otherwise. */
export const REPLY_EXPECTING_ACTS: ReadonlySet<Act> = new Set(['request', 'query', 'propose']);

export const MAX_BODY_CHARS = 1_000_000;
export const MAX_SUBJECT_CHARS = 500;
const TRACEPARENT_PATTERN = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** What each field must be, in words, for error messages. */
const EXPECTED: Record<string, string> = {
  id: `a message id matching ${MESSAGE_ID_PATTERN.source}`,
  conversation: `a conversation id matching ${MESSAGE_ID_PATTERN.source}`,
  in_reply_to: 'a message id or null',
  from: `an agent id matching ${AGENT_ID_PATTERN.source}`,
  to: `an agent id matching ${AGENT_ID_PATTERN.source}, "${GOD_ID}", "${HUMAN_ALIAS}" or "${BROADCAST}"`,
  act: `one of ${ACTS.join(', ')}`,
  subject: `a string of at most ${MAX_SUBJECT_CHARS} characters`,
  body: `a string of at most ${MAX_BODY_CHARS} characters`,
  hops: 'a non-negative integer',
  requires_reply: 'a boolean',
  needs_human: 'a boolean',
  created_at: 'an ISO 8601 date-time such as 2026-01-31T12:00:00.000Z',
  traceparent: 'a W3C traceparent such as 00-<32 hex>-<16 hex>-01',
};

const messageId = z.string().check(z.regex(MESSAGE_ID_PATTERN));
const agentId = z.string().check(z.refine(isAgentId));

const RawMessageSchema = z.object({
  id: z.optional(messageId),
  conversation: z.optional(messageId),
  in_reply_to: z.optional(z.nullable(messageId)),
  from: agentId,
  to: agentId,
  act: z.enum(ACTS),
  subject: z.optional(z.string().check(z.maxLength(MAX_SUBJECT_CHARS))),
  body: z.string().check(z.maxLength(MAX_BODY_CHARS)),
  hops: z.optional(z.number().check(z.int(), z.minimum(0))),
  requires_reply: z.optional(z.boolean()),
  needs_human: z.optional(z.boolean()),
  created_at: z.optional(z.iso.datetime({ offset: true })),
  traceparent: z.optional(z.string().check(z.regex(TRACEPARENT_PATTERN))),
});

/**
 * The wire and disk schema of a message. The single source of the `HiveMessage` type.
 * Unknown fields are dropped; optional fields get munder-difflin's defaults.
 */
export const HiveMessageSchema = z.pipe(
  RawMessageSchema,
  z.transform((m: z.output<typeof RawMessageSchema>) => {
    const id = m.id ?? newId();
    const message = {
      id,
      conversation: m.conversation ?? id,
      in_reply_to: m.in_reply_to ?? null,
      from: m.from,
      to: m.to,
      act: m.act,
      subject: m.subject ?? '',
      body: m.body,
      hops: m.hops ?? 0,
      requires_reply: m.requires_reply ?? REPLY_EXPECTING_ACTS.has(m.act),
      needs_human: m.needs_human ?? false,
      created_at: m.created_at ?? new Date().toISOString(),
    };
    return m.traceparent === undefined ? message : Object.assign(message, { traceparent: m.traceparent });
  }),
);

/** A validated message with every default filled in. */
export type HiveMessage = z.output<typeof HiveMessageSchema> & { traceparent?: string };
/** What a writer may hand in: only from, to, act and body are required. */
export type HiveMessageInput = z.input<typeof HiveMessageSchema>;

export interface FieldProblem {
  field: string;
  expected: string;
  received: string;
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v: unknown = input;
  for (const key of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function problemsOf(error: { issues: z.core.$ZodIssue[] }, input: unknown): FieldProblem[] {
  return error.issues.map((issue) => {
    const field = issue.path.length === 0 ? '(message)' : issue.path.map(String).join('.');
    const top = String(issue.path[0] ?? '');
    const expected = issue.path.length === 0 ? 'a JSON object' : (EXPECTED[top] ?? issue.message);
    return { field, expected, received: describeValue(issue.path.length === 0 ? input : valueAt(input, issue.path)) };
  });
}

// `regexes` from zod's core, not `z.core.regexes`: reaching through `z.core` keeps the whole
// core namespace (every locale included) in each worker's bundle.
const DATETIME_PATTERN = regexes.datetime({ offset: true });
const ACT_SET: ReadonlySet<string> = new Set(ACTS);
const isMessageId = (v: unknown): v is string => typeof v === 'string' && MESSAGE_ID_PATTERN.test(v);

/**
 * The schema's result for a message every field of which is plainly valid, in a fraction
 * of the schema's time (zod was a third of an agent's CPU per pair in bench:peers), or null
 * for anything else: `parseMessage` then asks the schema, which decides and explains. It
 * accepts only what the schema accepts and builds the same message (test/message-fast-path.test.ts).
 */
export function parseWellFormed(input: unknown): HiveMessage | null {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return null;
  const m = input as Record<string, unknown>;
  const { id, conversation, in_reply_to, from, to, act, subject, body, hops, requires_reply, needs_human, created_at, traceparent } = m;
  if (!isAgentId(from) || !isAgentId(to) || typeof act !== 'string' || !ACT_SET.has(act)) return null;
  if (typeof body !== 'string' || body.length > MAX_BODY_CHARS) return null;
  if (id !== undefined && !isMessageId(id)) return null;
  if (conversation !== undefined && !isMessageId(conversation)) return null;
  if (in_reply_to !== undefined && in_reply_to !== null && !isMessageId(in_reply_to)) return null;
  if (subject !== undefined && (typeof subject !== 'string' || subject.length > MAX_SUBJECT_CHARS)) return null;
  if (hops !== undefined && !(Number.isSafeInteger(hops) && (hops as number) >= 0)) return null;
  if (requires_reply !== undefined && typeof requires_reply !== 'boolean') return null;
  if (needs_human !== undefined && typeof needs_human !== 'boolean') return null;
  if (created_at !== undefined && !(typeof created_at === 'string' && DATETIME_PATTERN.test(created_at))) return null;
  if (traceparent !== undefined && !(typeof traceparent === 'string' && TRACEPARENT_PATTERN.test(traceparent))) return null;
  const messageId = (id as string | undefined) ?? newId();
  const message: HiveMessage = {
    id: messageId,
    conversation: (conversation as string | undefined) ?? messageId,
    in_reply_to: (in_reply_to as string | null | undefined) ?? null,
    from,
    to,
    act: act as Act,
    subject: (subject as string | undefined) ?? '',
    body,
    hops: (hops as number | undefined) ?? 0,
    requires_reply: (requires_reply as boolean | undefined) ?? REPLY_EXPECTING_ACTS.has(act as Act),
    needs_human: (needs_human as boolean | undefined) ?? false,
    created_at: (created_at as string | undefined) ?? new Date().toISOString(),
  };
  return traceparent === undefined ? message : Object.assign(message, { traceparent: traceparent as string });
}

/** Formats problems as `field \`to\`: expected ..., got ...` lines. */
export function describeProblems(problems: FieldProblem[]): string {
  return problems.map((p) => `field \`${p.field}\`: expected ${p.expected}, got ${p.received}`).join('; ');
}

export type ParseResult = { ok: true; message: HiveMessage } | { ok: false; error: HiveError };

/**
 * Validates `input` and fills defaults. Never throws.
 * @example
 * const r = parseMessage({ from: 'alice', to: 'bob', act: 'request', body: 'hi' });
 * if (r.ok) console.log(r.message.id, r.message.requires_reply); // '01j...', true
 */
export function parseMessage(input: unknown): ParseResult {
  const fast = parseWellFormed(input);
  if (fast !== null) return { ok: true, message: fast };
  const result = HiveMessageSchema.safeParse(input);
  if (result.success) return { ok: true, message: result.data as HiveMessage };
  const problems = problemsOf(result.error, input);
  return {
    ok: false,
    error: new HiveError('E_BAD_MESSAGE', `Invalid message: ${describeProblems(problems)}`, {
      details: { problems },
    }),
  };
}

/**
 * Like `parseMessage` but throws `E_BAD_MESSAGE`.
 * @example const m = createMessage({ from: 'alice', to: 'bob', act: 'inform', body: 'done' });
 */
export function createMessage(input: HiveMessageInput): HiveMessage {
  const r = parseMessage(input);
  if (!r.ok) throw r.error;
  return r.message;
}

/** Parses the text of a message file; invalid JSON is reported like a schema error. */
export function parseMessageText(text: string): ParseResult {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      error: new HiveError('E_BAD_MESSAGE', `Invalid message: not valid JSON (${(err as Error).message})`, {
        details: { problems: [{ field: '(file)', expected: 'valid JSON', received: describeValue(text.slice(0, 60)) }] },
      }),
    };
  }
  return parseMessage(data);
}

/** The single recipient id an agent-addressed message resolves to (`human` is god's alias). */
export function recipientOf(message: Pick<HiveMessage, 'to' | 'needs_human'>): string {
  if (message.needs_human || message.to === HUMAN_ALIAS) return GOD_ID;
  return message.to;
}
