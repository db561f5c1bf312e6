import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { InboxWriter } from '../src/queue/inbox-writer.ts';
import { InboxReader } from '../src/queue/inbox.ts';
import { installSeams } from '../src/testing/seams.ts';

/**
 * The router's wake tells the agent's host what it delivered (docs/architecture.md, "Inbox
 * logs"): the agent's reader takes the entries from the wake when they continue exactly
 * where its last read ended, and reads the log in every other case.
 */

async function hive() {
  const root = tempRoot();
  await ensureHive(root);
  await ensureAgent(root, { id: 'b', brain: { kind: 'echo' } });
  return root;
}

const note = (i: number): HiveMessage => createMessage({ from: 'god', to: 'b', act: 'inform', body: `note ${i}` });
const bodies = (entries: { message: HiveMessage }[]) => entries.map((e) => e.message.body);

/** Writes over the bytes of a batch in the segment: a read of the log would find no valid entries there. */
function spoil(file: string, from: number, to: number): void {
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(to - from, 'x'.charCodeAt(0)), 0, to - from, from);
  fs.closeSync(fd);
}

/** A telling writer and the agent's reader, which has read entry 1 from the log (its first read). */
async function started() {
  const root = await hive();
  const writer = new InboxWriter(root, 'b', { tell: true });
  const reader = new InboxReader(root, 'b');
  await writer.append([note(1)]);
  writer.takeTold();
  const first = reader.read(0).entries;
  return { writer, reader, first };
}

describe('deliveries told with the wake', () => {
  it('a told batch that continues the last read is taken from the wake, not read from the log; a wake from elsewhere reads the log', async () => {
    const { writer, reader, first } = await started();
    expect(bodies(first)).toEqual(['note 1']); // a first read reads the log
    await writer.append([note(2), note(3)]);
    const [told] = writer.takeTold();
    expect([told!.seq, told!.text.split('\n').length - 1]).toEqual([2, 2]); // two lines from seq 2
    spoil(told!.file, told!.start, told!.start + Buffer.byteLength(told!.text) - 1); // the log no longer holds them as written
    reader.offer(told!);
    const got = reader.read(1).entries;
    expect(bodies(got)).toEqual(['note 2', 'note 3']);
    expect(got.map((e) => e.ref)).toEqual(['agents/b/inbox/000000000001.jsonl#2', 'agents/b/inbox/000000000001.jsonl#3']);

    // Told in part by the limit, the rest next time, then a read of the log goes on after them.
    await writer.append([note(4), note(5), note(6)]);
    reader.offer(writer.takeTold()[0]!);
    expect(bodies(reader.read(3, 2).entries)).toEqual(['note 4', 'note 5']);
    expect(bodies(reader.read(5).entries)).toEqual(['note 6']);
    await writer.append([note(7)]);
    writer.takeTold();
    reader.lookAgain(); // woken by the poll or through main: nothing told
    expect(bodies(reader.read(6).entries)).toEqual(['note 7']);
    writer.close();
  });

  it('a told batch that does not continue the last read (one in between was not told) makes the reader read the log: nothing skipped', async () => {
    const { writer, reader } = await started();
    await writer.append([note(2)]);
    writer.takeTold(); // its wake went elsewhere (no direct channel): not told
    await writer.append([note(3)]);
    reader.offer(writer.takeTold()[0]!);
    expect(bodies(reader.read(1).entries)).toEqual(['note 2', 'note 3']);
    // A retry from an older cursor (a failed turn) reads the log too.
    expect(bodies(reader.read(0).entries)).toEqual(['note 1', 'note 2', 'note 3']);
    writer.close();
  });

  it('a told batch whose lines do not check (garbled on the way) is not taken: the log is read', async () => {
    const { writer, reader } = await started();
    await writer.append([note(2)]);
    const [told] = writer.takeTold();
    reader.offer({ ...told!, text: told!.text.replace('note 2', 'note X') });
    expect(bodies(reader.read(1).entries)).toEqual(['note 2']);
    writer.close();
  });

  it('an agent told of more than it reads (a long turn) holds at most ~1 MiB of it: past that it reads the log, nothing skipped', async () => {
    const { writer, reader } = await started();
    const big = (i: number) => createMessage({ from: 'god', to: 'b', act: 'inform', body: `big ${i} ${'x'.repeat(60_000)}` });
    for (let i = 2; i <= 40; i++) {
      await writer.append([big(i)]);
      reader.offer(writer.takeTold()[0]!);
    }
    expect((reader as unknown as { told: { held: number } }).told.held).toBeLessThanOrEqual(1 << 20);
    const got = reader.read(1).entries;
    expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 39 }, (_, i) => i + 2));
    writer.close();
  });

  it('a batch is told only once its flush has returned (a power cut before it could take the lines; a reader told of them would handle what is lost)', async () => {
    const root = await hive();
    const writer = new InboxWriter(root, 'b', { tell: true });
    installSeams({ fsyncDelayMs: 300 }, root); // every flush of this thread waits first
    try {
      const appending = writer.append([note(1)]); // not inline: its flush runs on the thread pool, after the wait
      await new Promise((r) => setTimeout(r, 100));
      expect(fs.readFileSync(`${root}/agents/b/inbox/000000000001.jsonl`, 'utf8')).toContain('note 1'); // written
      expect(writer.takeTold()).toEqual([]); // not flushed yet: not told
      await appending;
      expect(writer.takeTold().map((h) => h.seq)).toEqual([1]);
    } finally {
      installSeams({}, root);
      writer.close();
    }
  });

  it('a writer that is not asked to tell keeps nothing', async () => {
    const root = await hive();
    const writer = new InboxWriter(root, 'b');
    await writer.append([note(1)]);
    expect(writer.takeTold()).toEqual([]);
    writer.close();
  });
});
