import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';

// Count the router's flushes: the real flush runs, each call is recorded.
const flushed = vi.hoisted(() => [] as string[]);
vi.mock('../src/fs/atomic.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/fs/atomic.ts')>();
  return {
    ...real,
    syncFileAsync: async (file: string) => {
      flushed.push(`file ${file}`);
      return real.syncFileAsync(file);
    },
    fsyncDirAsync: async (dir: string) => {
      flushed.push(`dir ${dir}`);
      return real.fsyncDirAsync(dir);
    },
    syncFdAsync: async (fd: number, dataOnly: boolean) => {
      flushed.push(dataOnly ? 'fdatasync' : 'fsync');
      return real.syncFdAsync(fd, dataOnly);
    },
  };
});

const { tempRoot } = await import('./helpers/temp.ts');
const { ensureAgent, ensureHive } = await import('../src/layout/ensure.ts');
const { createMessage } = await import('../src/protocol/message.ts');
const { readOutbox, writeOutbox, writeOutboxAsync } = await import('../src/queue/outbox.ts');
const { createFsTransport } = await import('../src/queue/fs-transport.ts');
const { readInbox } = await import('../src/queue/inbox.ts');

describe('what delivery flushes', () => {
  it('outbox files flushed by their writer are read-only; a batch into an inbox log is one fdatasync (and one folder fsync when a segment begins), whatever its sources', async () => {
    const root = tempRoot();
    await ensureHive(root);
    for (const id of ['a', 'b', 'c', 'd']) await ensureAgent(root, { id });
    const durable = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'flushed by its writer' });
    const batched = createMessage({ from: 'c', to: 'b', act: 'inform', body: 'group commit' });
    const commit = createMessage({ from: 'd', to: 'b', act: 'inform', body: 'an actor commit (state.wal holds it)' });
    writeOutbox(root, [durable]);
    await writeOutboxAsync(root, [batched]);
    writeOutbox(root, [commit], { durable: false });
    const byHand = createMessage({ from: 'd', to: 'b', act: 'inform', body: 'written by a person' });
    const handFile = `${root}/agents/d/outbox/${byHand.id}.json`;
    fs.writeFileSync(handFile, `${JSON.stringify(byHand, null, 2)}\n`);

    expect(readOutbox(root, 'a').map((f) => f.flushed)).toEqual([true]);
    expect(readOutbox(root, 'c').map((f) => f.flushed)).toEqual([true]);
    expect(readOutbox(root, 'd').map((f) => f.flushed)).toEqual([false, false]);
    expect(fs.statSync(`${root}/agents/a/outbox/${durable.id}.json`).mode & 0o777).toBe(0o400);
    // A umask that strips write bits cannot make an unflushed commit look flushed.
    const previous = process.umask(0o222);
    let stripped: ReturnType<typeof createMessage>;
    try {
      stripped = createMessage({ from: 'd', to: 'b', act: 'inform', body: 'written under umask 222' });
      writeOutbox(root, [stripped], { durable: false });
    } finally {
      process.umask(previous);
    }
    expect(fs.statSync(`${root}/agents/d/outbox/${stripped.id}.json`).mode & 0o777).toBe(0o600);
    expect(readOutbox(root, 'd').map((f) => f.flushed)).toEqual([false, false, false]);
    fs.rmSync(`${root}/agents/d/outbox/${stripped.id}.json`);

    const t = createFsTransport(root);
    const pending = [...(await t.pending('a')), ...(await t.pending('c')), ...(await t.pending('d'))].map((p) => p.message!);
    flushed.length = 0;
    const first = await t.deliver('b', pending.slice(0, 2));
    expect(first.every((o) => o.status === 'delivered')).toBe(true);
    // The first batch opens the log (recovery: nothing to flush but the new segment's) and begins a segment.
    expect(flushed.sort()).toEqual([`dir ${root}/agents/b/inbox`, 'fdatasync']); // issued together
    flushed.length = 0;
    await t.deliver('b', pending.slice(2));
    expect(flushed).toEqual(['fdatasync']); // the sources are copied, never flushed or linked
    const entries = readInbox(root, 'b', 0).entries;
    expect(entries.map((e) => e.message.id).sort()).toEqual([durable, batched, commit, byHand].map((m) => m.id).sort());
    t.close();
  });
});
