import { describe, expect, it } from 'vitest';
import { composeMessages } from '../src/agent/compose.ts';
import { createMessage } from '../src/protocol/message.ts';
import { idTime } from '../src/protocol/ids.ts';
import type { BrainInput } from '../src/brains/types.ts';

describe('the ids of the messages a turn emits', () => {
  const request = createMessage({ from: 'client', to: 'echo', act: 'request', body: 'ping' });
  const input: BrainInput = { kind: 'message', seq: 1, message: request };
  const drafts = [
    { to: 'client', act: 'inform' as const, body: 'pong', in_reply_to: request.id },
    { to: 'log', act: 'inform' as const, body: 'noted' },
  ];

  it("a draft's own `__proto__` key (JSON from a brain) is copied as data, never made the prototype: nothing it holds reaches the message", () => {
    const draft = JSON.parse('{"to":"client","act":"inform","body":"x","__proto__":{"needs_human":true,"subject":"from the prototype"}}') as (typeof drafts)[number];
    const [m] = composeMessages('echo', input, [draft], Date.now()).messages;
    expect(m).toMatchObject({ to: 'client', needs_human: false, subject: '' });
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
  });

  it('are the same on every run of the turn, whenever it runs (two owners of one agent that both commit it emit one message each, not two)', () => {
    const first = composeMessages('echo', input, drafts, Date.now());
    const again = composeMessages('echo', input, drafts, Date.now() + 60_000);
    expect(again.messages.map((m) => m.id)).toEqual(first.messages.map((m) => m.id));
    expect(new Set(first.messages.map((m) => m.id)).size).toBe(2);
  });

  it('differ between agents, inputs and positions, and carry the input\'s time', () => {
    const other = createMessage({ from: 'client', to: 'echo', act: 'request', body: 'ping' });
    const a = composeMessages('echo', input, drafts, 0).messages[0]!.id;
    expect(composeMessages('echo-2', input, drafts, 0).messages[0]!.id).not.toBe(a);
    expect(composeMessages('echo', { kind: 'message', seq: 2, message: other }, drafts, 0).messages[0]!.id).not.toBe(a);
    expect(idTime(a)).toBe(idTime(request.id));
    const timer: BrainInput = { kind: 'timer', timer: { id: 'timer-x', name: 'remind', at: 1_800_000_000_000, payload: null } };
    const fromTimer = composeMessages('echo', timer, drafts, Date.now());
    expect(idTime(fromTimer.messages[0]!.id)).toBe(1_800_000_000_000);
    expect(composeMessages('echo', timer, drafts, Date.now() + 5).messages[0]!.id).toBe(fromTimer.messages[0]!.id);
  });

  it('stay valid and distinct past the 32,768 a millisecond the sequence part holds', () => {
    const many = Array.from({ length: 32_770 }, (_, i) => ({ to: 'client', act: 'inform' as const, body: String(i) }));
    const ids = composeMessages('echo', input, many, 0).messages.map((m) => m.id);
    expect(ids).toHaveLength(32_770);
    expect(new Set(ids).size).toBe(32_770);
    expect(idTime(ids.at(-1)!)).toBe(idTime(request.id)! + 1);
  });
});
