import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonlJournal, readJsonl } from '../src/session/journal.ts';
import { appendEvent } from '../src/log/event-log.ts';
import { tempDir } from './helpers/temp.ts';

describe('JSON-lines journals', () => {
  it('never hold more than their cap, keeping the newest lines', () => {
    const file = path.join(tempDir(), 't.jsonl');
    const j = new JsonlJournal<{ n: number }>(file, 20);
    for (let n = 0; n < 100; n++) {
      j.append([{ n }]);
      expect(readJsonl(file).length).toBeLessThanOrEqual(20);
    }
    expect(readJsonl<{ n: number }>(file).at(-1)).toEqual({ n: 99 });
    j.append([{ n: 100 }, { n: 101 }, { n: 102 }]);
    expect(readJsonl(file).length).toBeLessThanOrEqual(20);
  });

  it('hold even a cap smaller than a batch (cap 1 and 2, batches of 2 and 3)', () => {
    for (const cap of [1, 2, 3]) {
      const file = path.join(tempDir(), `t${cap}.jsonl`);
      const j = new JsonlJournal<{ n: number }>(file, cap);
      for (let n = 0; n < 30; n += 2) {
        j.append([{ n }, { n: n + 1 }]);
        expect(readJsonl(file).length).toBeLessThanOrEqual(cap);
      }
      j.append([{ n: 100 }, { n: 101 }, { n: 102 }]);
      expect(readJsonl<{ n: number }>(file)).toEqual([{ n: 100 }, { n: 101 }, { n: 102 }].slice(-cap));
    }
  });

  it('keep trimming after a tail torn inside a multi-byte character', () => {
    const file = path.join(tempDir(), 't.jsonl');
    const whole = Buffer.from('{"text":"café"}\n{"text":"caf', 'utf8');
    fs.writeFileSync(file, Buffer.concat([whole, Buffer.from('é', 'utf8').subarray(0, 1)])); // cut inside é
    const j = new JsonlJournal<{ n: number }>(file, 20);
    for (let n = 0; n < 200; n++) j.append([{ n }]);
    expect(readJsonl(file).length).toBeLessThanOrEqual(20);
  });

  it('start on a fresh line after a torn last line, so the next record is not swallowed', () => {
    const file = path.join(tempDir(), 't.jsonl');
    fs.writeFileSync(file, '{"n":1}\n{"n":2, "tor');
    new JsonlJournal<{ n: number }>(file, 100).append([{ n: 3 }]);
    expect(readJsonl(file)).toEqual([{ n: 1 }, { n: 3 }]);
  });

  it('keep the cap and every line when two writers append to one file', () => {
    const file = path.join(tempDir(), 't.jsonl');
    const agent = new JsonlJournal<{ w: string; n: number }>(file, 30);
    const hooks = new JsonlJournal<{ w: string; n: number }>(file, 30);
    for (let n = 0; n < 200; n++) {
      agent.append([{ w: 'agent', n }]);
      hooks.append([{ w: 'hooks', n }]);
      expect(readJsonl(file).length).toBeLessThanOrEqual(30);
    }
    // The newest lines of both writers are there, in order.
    expect(readJsonl(file).slice(-4)).toEqual([
      { w: 'agent', n: 198 },
      { w: 'hooks', n: 198 },
      { w: 'agent', n: 199 },
      { w: 'hooks', n: 199 },
    ]);
  });

  it('the event log recovers from a torn last line (the chaos journal-truncate fault)', () => {
    const root = tempDir();
    const log = path.join(root, 'log.jsonl');
    // What a restarted supervisor finds after the log was cut in the middle of a line.
    fs.writeFileSync(log, '{"type":"first"}\n{"type":"sec');
    appendEvent(root, { type: 'after-the-cut' });
    expect(readJsonl<{ type: string }>(log).map((e) => e.type)).toEqual(['first', 'after-the-cut']);
  });
});
