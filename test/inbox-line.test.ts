import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeEntryLine, encodeEntryLine } from '../src/queue/inbox-log.ts';
import { createMessage } from '../src/protocol/message.ts';

// An inbox (or send log) line: {"seq":N,"sum":"<16 hex>","message":{…}}. A line as the
// router wrote it is checked over its message JSON as it stands (one parse); any other
// line takes the general path. Either way a torn or edited line never passes.

const message = createMessage({ from: 'alice', to: 'bob', act: 'request', body: 'hello, "bob" ✓', subject: 's' });
const line = encodeEntryLine(7, message).slice(0, -1); // without its newline

describe('inbox line decoding', () => {
  it('a line as written decodes to the message it holds', () => {
    expect(decodeEntryLine(line, 7, 'seg')).toEqual({ ok: true, message });
  });

  it('every single-character change and every truncation of a line is refused', () => {
    for (let i = 0; i < line.length; i++) {
      const c = line[i] === 'x' ? 'y' : 'x';
      const changed = line.slice(0, i) + c + line.slice(i + 1);
      expect(decodeEntryLine(changed, 7, 'seg').ok, `change at ${i}`).toBe(false);
      expect(decodeEntryLine(line.slice(0, i), 7, 'seg').ok, `cut at ${i}`).toBe(false);
    }
  });

  it('a line read at another seq is refused, naming the seq it says', () => {
    const r = decodeEntryLine(line, 8, 'seg');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/says seq 7/);
  });

  it('a line written by hand with other spacing but a right sum still decodes (the general path)', () => {
    const json = JSON.stringify(message);
    const sum = createHash('sha256').update(`3:${json}`).digest('hex').slice(0, 16);
    const hand = `{ "seq": 3, "sum": "${sum}", "message": ${JSON.stringify(message, null, 1).replace(/\n/g, ' ')} }`;
    expect(decodeEntryLine(hand, 3, 'seg')).toEqual({ ok: true, message });
  });

  it('a line whose message fails the schema is refused with the schema\'s reason', () => {
    const bad = { ...message, to: '../etc' };
    const json = JSON.stringify(bad);
    const sum = createHash('sha256').update(`4:${json}`).digest('hex').slice(0, 16);
    const r = decodeEntryLine(`{"seq":4,"sum":"${sum}","message":${json}}`, 4, 'seg');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/field `to`/);
  });
});
