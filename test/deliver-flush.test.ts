import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';

// Count the router's source flushes: the real flush runs, each call is recorded.
const flushed = vi.hoisted(() => [] as string[]);
vi.mock('../src/fs/atomic.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/fs/atomic.ts')>();
  return {
    ...real,
    syncFileAsync: async (file: string) => {
      flushed.push(file);
      return real.syncFileAsync(file);
    },
  };
});

const { tempRoot } = await import('./helpers/temp.ts');
const { ensureAgent, ensureHive } = await import('../src/layout/ensure.ts');
const { createMessage } = await import('../src/protocol/message.ts');
const { readOutbox, writeOutbox, writeOutboxAsync } = await import('../src/queue/outbox.ts');
const { createFsTransport } = await import('../src/queue/fs-transport.ts');
const { readInbox } = await import('../src/queue/inbox.ts');

describe('delivery flushes a linked source only when its writer did not', () => {
  it('durable writes are read-only and linked as they are; an actor commit or a hand-written file is flushed first', async () => {
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
    const outcomes = await t.deliver('b', pending);
    expect(outcomes.every((o) => o.status === 'delivered')).toBe(true);
    expect(flushed.sort()).toEqual([`${root}/agents/d/outbox/${commit.id}.json`, handFile].sort());
    // Every entry is a link to its source (same inode), whole and readable.
    const entries = readInbox(root, 'b', 0).entries;
    expect(entries.map((e) => e.message.id).sort()).toEqual([durable, batched, commit, byHand].map((m) => m.id).sort());
    for (const e of entries) expect(fs.statSync(e.file).nlink).toBe(2);
  });
});
