import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeEntryLine, encodeEntryLine } from '../src/queue/inbox-log.ts';
import { createMessage } from '../src/protocol/message.ts';

// An inbox (or send log) line: {"seq":N,"sum":"<8 hex: CRC-32>","message":{…}} (Hive 0.1
// wrote a 16-hex SHA-256 prefix: still read). A line as the
// router wrote it is checked over its message JSON as it stands (one parse); any other
// line takes the general path. Either way a torn or edited line never passes.

const message = createMessage({ from: 'alice', to: 'bob', act: 'request', body: 'hello, "bob" ✓', subject: 's' });
const line = encodeEntryLine(7, message).slice(0, -1); // without its newline
const json = JSON.stringify(message);
const legacySum = (seq: number, j: string) => createHash('sha256').update(`${seq}:${j}`).digest('hex').slice(0, 16);
/** The line Hive 0.1 wrote for the same entry. */
const legacyLine = `{"seq":7,"sum":"${legacySum(7, json)}","message":${json}}`;

describe('inbox line decoding', () => {
  it('a line as written decodes to the message it holds', () => {
    expect(decodeEntryLine(line, 7, 'seg')).toEqual({ ok: true, message });
  });

  it('the sum is the CRC-32 of "<seq>:<message JSON>" in 8 hex digits', () => {
    expect(line.startsWith(`{"seq":7,"sum":"${crc32(`7:${json}`).toString(16).padStart(8, '0')}","message":`)).toBe(true);
  });

  it('a line in the earlier format (a 16-hex SHA-256 prefix) still decodes, and is as strictly checked', () => {
    expect(decodeEntryLine(legacyLine, 7, 'seg')).toEqual({ ok: true, message });
    const spaced = `{ "seq": 7, "sum": "${legacySum(7, json)}", "message": ${json} }`;
    expect(decodeEntryLine(spaced, 7, 'seg')).toEqual({ ok: true, message });
    // An 8-hex CRC where the 16-hex SHA-256 prefix should be, and the other way round: refused.
    const crc = crc32(`7:${json}`).toString(16).padStart(8, '0');
    expect(decodeEntryLine(`{"seq":7,"sum":"${crc}${crc}","message":${json}}`, 7, 'seg').ok).toBe(false);
    expect(decodeEntryLine(`{"seq":7,"sum":"${legacySum(7, json).slice(0, 8)}","message":${json}}`, 7, 'seg').ok).toBe(false);
  });

  it('every single-character change and every truncation of a line is refused (both formats)', () => {
    for (const l of [line, legacyLine]) {
      for (let i = 0; i < l.length; i++) {
        const c = l[i] === 'x' ? 'y' : 'x';
        const changed = l.slice(0, i) + c + l.slice(i + 1);
        expect(decodeEntryLine(changed, 7, 'seg').ok, `change at ${i}`).toBe(false);
        expect(decodeEntryLine(l.slice(0, i), 7, 'seg').ok, `cut at ${i}`).toBe(false);
      }
    }
  });

  it('a line read at another seq is refused, naming the seq it says', () => {
    const r = decodeEntryLine(line, 8, 'seg');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/says seq 7/);
  });

  it('a line written by hand with other spacing but a right sum still decodes (the general path)', () => {
    const sum = crc32(`3:${json}`).toString(16).padStart(8, '0');
    const hand = `{ "seq": 3, "sum": "${sum}", "message": ${JSON.stringify(message, null, 1).replace(/\n/g, ' ')} }`;
    expect(decodeEntryLine(hand, 3, 'seg')).toEqual({ ok: true, message });
  });

  it('a line whose message fails the schema is refused with the schema\'s reason', () => {
    const bad = { ...message, to: '../etc' };
    const badJson = JSON.stringify(bad);
    const sum = crc32(`4:${badJson}`).toString(16).padStart(8, '0');
    const r = decodeEntryLine(`{"seq":4,"sum":"${sum}","message":${badJson}}`, 4, 'seg');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/field `to`/);
  });
});
