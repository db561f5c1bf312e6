import { HiveError } from '../errors.ts';
import { ACTS } from '../protocol/message.ts';
import type { BrainInput, BrainOutput, Draft, JsonValue } from './types.ts';

/**
 * Reads what a prompt-driven brain answered: plain text (a reply to the sender) or JSON
 * `{ reply?, messages?, state? }`; Claude's `--output-format json` envelope
 * (`{ type: 'result', result, is_error }`) and `{ text }`/`{ content }` are understood too.
 */
export function parseBrainAnswer(raw: string, input: BrainInput, mode: 'text' | 'json', source: string): BrainOutput {
  const text = raw.trim();
  let data: unknown = null;
  if (mode === 'json' || text.startsWith('{')) {
    try {
      data = JSON.parse(text);
    } catch (err) {
      if (mode === 'json') {
        throw new HiveError('E_BRAIN', `${source} printed unreadable output (expected JSON): ${(err as Error).message}; output starts ${JSON.stringify(text.slice(0, 80))}`);
      }
    }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    if (mode === 'json') throw new HiveError('E_BRAIN', `${source} printed ${JSON.stringify(text.slice(0, 80))}; expected a JSON object`);
    return withReply({ messages: [] }, text, input);
  }
  const o = data as Record<string, unknown>;
  if (o.is_error === true) throw new HiveError('E_BRAIN', `${source} reported an error: ${String(o.result ?? o.error ?? 'unknown')}`);
  const replyText = [o.reply, o.result, o.text, o.content].find((v) => typeof v === 'string') as string | undefined;
  const messages: Draft[] = [];
  if (o.messages !== undefined) {
    if (!Array.isArray(o.messages)) throw new HiveError('E_BRAIN', `${source}: "messages" must be an array, got ${typeof o.messages}`);
    o.messages.forEach((m, i) => messages.push(toDraft(m, i, source)));
  }
  const out: BrainOutput = { messages };
  if (o.state !== undefined) out.state = o.state as JsonValue;
  return withReply(out, replyText ?? '', input);
}

function toDraft(m: unknown, i: number, source: string): Draft {
  const d = m as Record<string, unknown>;
  const bad = (field: string, expected: string) =>
    new HiveError('E_BRAIN', `${source}: messages[${i}].${field} must be ${expected}, got ${JSON.stringify(d?.[field])}`);
  if (typeof d !== 'object' || d === null) throw new HiveError('E_BRAIN', `${source}: messages[${i}] must be an object`);
  if (typeof d.to !== 'string') throw bad('to', 'a recipient id');
  if (typeof d.body !== 'string') throw bad('body', 'a string');
  const act = d.act ?? 'inform';
  if (!(ACTS as readonly unknown[]).includes(act)) throw bad('act', `one of ${ACTS.join(', ')}`);
  const draft: Draft = { to: d.to, act: act as Draft['act'], body: d.body };
  if (typeof d.subject === 'string') draft.subject = d.subject;
  if (typeof d.needs_human === 'boolean') draft.needs_human = d.needs_human;
  if (typeof d.requires_reply === 'boolean') draft.requires_reply = d.requires_reply;
  if (typeof d.in_reply_to === 'string') draft.in_reply_to = d.in_reply_to;
  if (typeof d.conversation === 'string') draft.conversation = d.conversation;
  return draft;
}

/** A non-empty reply goes back to the sender of a message input. */
function withReply(out: BrainOutput, reply: string, input: BrainInput): BrainOutput {
  const text = reply.trim();
  if (!text) return out;
  out.reply = text;
  if (input.kind === 'message') {
    out.messages.unshift({ to: input.message.from, act: 'inform', in_reply_to: input.message.id, body: text });
  }
  return out;
}
