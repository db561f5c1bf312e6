import { describe, expect, it } from 'vitest';
import { parseMessage, parseMessageText, createMessage, recipientOf } from '../src/protocol/message.ts';
import { newId, idTime } from '../src/protocol/ids.ts';
import { assertAgentId, isAgentId } from '../src/protocol/agent-id.ts';
import { isHiveError } from '../src/errors.ts';

const base = { from: 'alice', to: 'bob', act: 'request', body: 'hello' } as const;

function problem(input: unknown) {
  const r = parseMessage(input);
  expect(r.ok).toBe(false);
  if (r.ok) throw new Error('unreachable');
  expect(r.error.code).toBe('E_BAD_MESSAGE');
  return r.error.message;
}

describe('HiveMessage schema', () => {
  it('parses the exact munder-difflin on-disk format', () => {
    const text = JSON.stringify({
      id: 'msg-001',
      conversation: 'conv-1',
      from: 'agent-42',
      to: 'agent-7',
      act: 'request',
      subject: 'Need data',
      body: 'Please fetch the latest report.',
      hops: 0,
      requires_reply: true,
      needs_human: false,
      created_at: '2026-03-01T10:00:00.000Z',
    });
    const r = parseMessageText(text);
    expect(r.ok && r.message).toMatchObject({ id: 'msg-001', conversation: 'conv-1', in_reply_to: null, hops: 0 });
  });

  it('fills defaults: a time-sortable id, conversation = id, hops 0, needs_human false, created_at now', () => {
    const m = createMessage(base);
    expect(m.id).toMatch(/^[0-9a-z]{26}$/);
    expect(Math.abs((idTime(m.id) ?? 0) - Date.now())).toBeLessThan(5_000);
    expect(m.conversation).toBe(m.id);
    expect(m.in_reply_to).toBeNull();
    expect(m.hops).toBe(0);
    expect(m.needs_human).toBe(false);
    expect(m.subject).toBe('');
    expect(Date.parse(m.created_at)).not.toBeNaN();
  });

  it('defaults requires_reply to true for request, query and propose only', () => {
    for (const act of ['request', 'query', 'propose']) expect(createMessage({ ...base, act } as never).requires_reply).toBe(true);
    for (const act of ['inform', 'agree', 'refuse', 'done']) expect(createMessage({ ...base, act } as never).requires_reply).toBe(false);
    expect(createMessage({ ...base, requires_reply: false }).requires_reply).toBe(false);
  });

  it('ids made in one process sort in creation order', () => {
    const ids = Array.from({ length: 500 }, () => newId());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(500);
  });

  it('rejects a non-object', () => {
    expect(problem('hello')).toContain('expected a JSON object');
    expect(problem(null)).toContain('got null');
  });

  it('rejects invalid JSON text with a clear error', () => {
    const r = parseMessageText('{ not json');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain('not valid JSON');
  });

  it('id: must be a safe message id', () => {
    expect(problem({ ...base, id: '../evil' })).toMatch(/field `id`: expected a message id .* got "..\/evil" \(string\)/);
    expect(problem({ ...base, id: 42 })).toContain('got 42 (number)');
  });

  it('conversation: must be an id', () => {
    expect(problem({ ...base, conversation: 'a b' })).toContain('field `conversation`');
  });

  it('in_reply_to: an id or null', () => {
    expect(createMessage({ ...base, in_reply_to: null }).in_reply_to).toBeNull();
    expect(problem({ ...base, in_reply_to: 7 })).toContain('field `in_reply_to`: expected a message id or null, got 7 (number)');
  });

  it('from: required agent id', () => {
    expect(problem({ ...base, from: undefined })).toContain('field `from`: expected an agent id');
    expect(problem({ ...base, from: 'Alice' })).toContain('got "Alice" (string)');
  });

  it('to: agent id, god, human or broadcast; never a path', () => {
    for (const to of ['god', 'human', 'broadcast', 'bob.2']) expect(createMessage({ ...base, to }).to).toBe(to);
    expect(problem({ ...base, to: '../../etc' })).toContain('field `to`');
    expect(problem({ ...base, to: '..' })).toContain('field `to`');
    expect(problem({ ...base, to: 'a/b' })).toContain('field `to`');
  });

  it('act: one of the speech acts', () => {
    expect(problem({ ...base, act: 'shout' })).toContain('field `act`: expected one of request, inform, propose, query, agree, refuse, done, got "shout"');
  });

  it('subject: a bounded string', () => {
    expect(problem({ ...base, subject: 5 })).toContain('field `subject`');
    expect(problem({ ...base, subject: 'x'.repeat(501) })).toContain('at most 500');
  });

  it('body: required string', () => {
    expect(problem({ ...base, body: undefined })).toContain('field `body`: expected a string');
    expect(problem({ ...base, body: ['a'] })).toContain('got an array of 1');
  });

  it('hops: a non-negative integer', () => {
    expect(problem({ ...base, hops: -1 })).toContain('field `hops`: expected a non-negative integer, got -1 (number)');
    expect(problem({ ...base, hops: 1.5 })).toContain('field `hops`');
    expect(problem({ ...base, hops: '2' })).toContain('got "2" (string)');
  });

  it('requires_reply and needs_human: booleans', () => {
    expect(problem({ ...base, requires_reply: 'yes' })).toContain('field `requires_reply`: expected a boolean');
    expect(problem({ ...base, needs_human: 1 })).toContain('field `needs_human`: expected a boolean');
  });

  it('created_at: ISO 8601', () => {
    expect(createMessage({ ...base, created_at: '2026-01-31T12:00:00+02:00' }).created_at).toBe('2026-01-31T12:00:00+02:00');
    expect(problem({ ...base, created_at: 'yesterday' })).toContain('field `created_at`: expected an ISO 8601 date-time');
  });

  it('traceparent: W3C format when present', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(createMessage({ ...base, traceparent: tp }).traceparent).toBe(tp);
    expect(problem({ ...base, traceparent: 'abc' })).toContain('field `traceparent`');
  });

  it('reports every bad field at once', () => {
    const r = parseMessage({ from: 'A', to: '../x', act: 'nope', body: 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect((r.error.details.problems as unknown[]).length).toBe(4);
  });

  it('routes needs_human and human to god', () => {
    expect(recipientOf(createMessage({ ...base, needs_human: true }))).toBe('god');
    expect(recipientOf(createMessage({ ...base, to: 'human' }))).toBe('god');
    expect(recipientOf(createMessage(base))).toBe('bob');
  });
});

describe('agent ids', () => {
  it('accept the agent-id pattern and refuse anything that could escape a folder', () => {
    for (const ok of ['a', 'agent-42', 'x.y_z', '0'.repeat(64)]) expect(isAgentId(ok)).toBe(true);
    for (const bad of ['', '.', '..', '../x', 'A', '-a', 'a/b', 'a\\b', 'a'.repeat(65), 'a\0']) expect(isAgentId(bad)).toBe(false);
  });

  it('assertAgentId throws E_BAD_AGENT_ID naming the value', () => {
    try {
      assertAgentId('../etc', 'recipient');
      expect.unreachable();
    } catch (err) {
      expect(isHiveError(err, 'E_BAD_AGENT_ID')).toBe(true);
      expect((err as Error).message).toContain('Expected recipient to match');
      expect((err as Error).message).toContain('"../etc"');
    }
  });
});
