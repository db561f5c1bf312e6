import { describe, expect, it } from 'vitest';
import { HiveMessageSchema, parseMessage, parseWellFormed, type HiveMessage } from '../src/protocol/message.ts';

// parseMessage answers plainly valid messages without the schema (parseWellFormed). The
// promise: it accepts only what HiveMessageSchema accepts and builds the same message, and
// leaves everything it does not accept to the schema, so errors are the schema's.

const base = {
  id: '01m8yeyhwb000pdngzsdq1wvpk',
  conversation: 'r0-1800-8aef77fb',
  in_reply_to: 'r0-1800-8aef77fb',
  from: 'echo-0',
  to: 'client',
  act: 'inform',
  subject: 'a subject',
  body: 'r0 1800',
  hops: 1,
  requires_reply: false,
  needs_human: false,
  created_at: '2026-12-03T17:24:04.107Z',
  traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01',
};

const UNDEFINED = Symbol('absent');
/** Values tried in each field: valid ones, edge cases and wrong ones. */
const candidates: Record<string, unknown[]> = {
  id: [UNDEFINED, undefined, null, '', 'a', 'A.b_c-d', '-leading', 'x'.repeat(128), 'x'.repeat(129), 'has space', 'ü', 7],
  conversation: [UNDEFINED, 'c1', '', '.x', 'x'.repeat(129), null, 3],
  in_reply_to: [UNDEFINED, null, 'r1', '', '../x', 0, false],
  from: ['alice', 'a', 'god', 'human', '.', '..', 'Alice', '-a', 'a'.repeat(64), 'a'.repeat(65), 'a/b', '', 1, null, UNDEFINED],
  to: ['bob', 'broadcast', 'human', 'god', 'b.c', 'B', '', ' bob', 'bob\n', null, UNDEFINED],
  act: ['request', 'inform', 'propose', 'query', 'agree', 'refuse', 'done', 'REQUEST', 'ask', '', 1, UNDEFINED],
  subject: [UNDEFINED, '', 's', 'x'.repeat(500), 'x'.repeat(501), 5, null],
  body: ['', 'hi', 'x'.repeat(1_000_000), 'x'.repeat(1_000_001), 1, null, ['a'], UNDEFINED],
  hops: [UNDEFINED, 0, -0, 1, 31, -1, 1.5, NaN, Infinity, 2 ** 53, '1', null],
  requires_reply: [UNDEFINED, true, false, 'true', 0, null],
  needs_human: [UNDEFINED, true, false, 1, null],
  created_at: [
    UNDEFINED, '2026-12-03T17:24:04.107Z', '2026-12-03T17:24:04Z', '2026-12-03T17:24:04.1234567Z', '2026-12-03T17:24:04+02:00',
    '2024-02-29T00:00:00Z', '2023-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-12-03T24:00:00Z', '2026-12-03 17:24:04Z',
    '2026-12-03T17:24Z', '2026-12-03', 'yesterday', '', 1764780000000, null,
  ],
  traceparent: [UNDEFINED, '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01', '00-0123456789ABCDEF0123456789abcdef-0123456789abcdef-01', 'x', '', null],
};

function withField(field: string, value: unknown): Record<string, unknown> {
  const m: Record<string, unknown> = { ...base };
  if (value === UNDEFINED) delete m[field];
  else m[field] = value;
  return m;
}

/** The schema's answer with the defaults that vary per call (id, created_at) taken from the fast path's. */
function bySchema(input: unknown, like: HiveMessage | null) {
  const r = HiveMessageSchema.safeParse(input);
  if (!r.success) return null;
  const out = { ...r.data } as HiveMessage;
  if (like && (input as Record<string, unknown>).id === undefined) {
    out.id = like.id;
    if ((input as Record<string, unknown>).conversation === undefined) out.conversation = like.id;
  }
  if (like && (input as Record<string, unknown>).created_at === undefined) out.created_at = like.created_at;
  return out;
}

describe('message validation fast path', () => {
  it('accepts exactly what the schema accepts, field by field, and builds the same message', () => {
    let accepted = 0;
    for (const [field, values] of Object.entries(candidates)) {
      for (const value of values) {
        const input = withField(field, value);
        const fast = parseWellFormed(input);
        const schema = bySchema(input, fast);
        if (fast !== null) {
          accepted++;
          expect(schema, `${field}=${String(value).slice(0, 40)}: fast path accepted what the schema refuses`).not.toBeNull();
          expect(fast).toEqual(schema);
        }
        // Whatever the fast path leaves, parseMessage decides as the schema does.
        expect(parseMessage(input).ok, `${field}=${String(value).slice(0, 40)}`).toBe(schema !== null);
      }
    }
    expect(accepted).toBeGreaterThan(40); // the fast path is taken for the ordinary shapes
  });

  it('agrees with the schema on random combinations of those values', () => {
    let seed = 42;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const fields = Object.keys(candidates);
    for (let i = 0; i < 3_000; i++) {
      const input: Record<string, unknown> = {};
      for (const f of fields) {
        const vs = candidates[f]!;
        const v = next() < 0.7 ? (base as Record<string, unknown>)[f] : vs[Math.floor(next() * vs.length)];
        if (v !== UNDEFINED) input[f] = v;
      }
      const fast = parseWellFormed(input);
      const schema = bySchema(input, fast);
      if (fast !== null) expect(fast).toEqual(schema);
      expect(parseMessage(input).ok).toBe(schema !== null);
    }
  });

  it('drops unknown fields and fills the defaults as the schema does', () => {
    const input = { from: 'a', to: 'b', act: 'request', body: 'x', extra: 1, __proto__x: 2 };
    const fast = parseWellFormed(input)!;
    expect(fast).not.toBeNull();
    expect(Object.keys(fast)).toEqual(Object.keys(bySchema(input, fast)!));
    expect(fast).toMatchObject({ requires_reply: true, needs_human: false, hops: 0, in_reply_to: null, subject: '', conversation: fast.id });
    expect(parseWellFormed([])).toBeNull();
    expect(parseWellFormed(null)).toBeNull();
    expect(parseWellFormed('{"from":"a"}')).toBeNull();
  });

  it('leaves the explaining to the schema', () => {
    const r = parseMessage(withField('to', '../etc'));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/field `to`: expected an agent id/);
  });
});
