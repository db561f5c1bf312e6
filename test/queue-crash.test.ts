import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { readOutbox } from '../src/queue/outbox.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { HIVE_LOCK_STALE_MS, acquireHiveLock } from '../src/lock/hive-lock.ts';
import { recoverDeadLock } from '../src/lock/owner.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { createMessage } from '../src/protocol/message.ts';
import { TMP_PREFIX, sweepTempFiles } from '../src/fs/atomic.ts';

describe('durability under SIGKILL', () => {
  it.each([
    ['one message per write', 1, undefined],
    ['group commits of 20, flushes issued together (writeOutboxAsync)', 20, '20'],
  ])('a writer killed mid-way through 1,000 messages (%s) leaves only whole messages, every acknowledged one present', async (_name, inFlight, batch) => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'w' });
    const child = startFixture('outbox-writer.ts', [root, 'w', '1000', ...(batch ? [batch] : [])]);
    const seed = Date.now() % 1_000_000;
    const killAt = 150 + (seed % 300);
    process.stdout.write(`queue-crash: killing the writer after ${killAt} acknowledgements (seed ${seed})\n`);
    const { lines, exited } = collectLines(child, () => {
      if (lines.length >= killAt && !child.killed) child.kill('SIGKILL');
    });
    const result = await exited;
    expect(result.signal).toBe('SIGKILL');
    const acked = [...lines];
    expect(acked.length).toBeLessThan(1000);
    const files = readOutbox(root, 'w');
    expect(files.every((f) => f.parsed.ok)).toBe(true);
    const onDisk = new Set(files.map((f) => (f.parsed.ok ? f.parsed.message.id : '')));
    for (const id of acked) expect(onDisk.has(id)).toBe(true);
    // At most the write in flight is on disk without its acknowledgement.
    expect(onDisk.size - acked.length).toBeLessThanOrEqual(inFlight);
    // Every name is a message, `.sent`, or the temp file of the write the kill cut short,
    // which the start-up sweep removes (its writer is dead).
    const outbox = agentPaths(root, 'w').outbox;
    const names = fs.readdirSync(outbox);
    expect(names.filter((n) => !n.endsWith('.json') && n !== '.sent' && !n.startsWith(TMP_PREFIX))).toEqual([]);
    expect(names.filter((n) => n.startsWith(TMP_PREFIX)).length).toBeLessThanOrEqual(inFlight);
    sweepTempFiles(outbox);
    expect(fs.readdirSync(outbox).filter((n) => n.startsWith(TMP_PREFIX))).toEqual([]);
  }, 60_000);

  it('a router killed mid-way through delivering 1,000 messages into one inbox log leaves every acknowledged entry, gap-free, after recovery', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'target' });
    const batch = 7;
    const child = startFixture('inbox-deliverer.ts', [root, 'target', 'p1', '1000', String(batch)]);
    const seed = Date.now() % 1_000_000;
    const killAt = 100 + (seed % 400);
    process.stdout.write(`queue-crash: killing the deliverer after ${killAt} acknowledgements (seed ${seed})\n`);
    const { lines, exited } = collectLines(child, () => {
      if (lines.filter((l) => l.startsWith('{')).length >= killAt && !child.killed) child.kill('SIGKILL');
    });
    const result = await exited;
    expect(result.signal).toBe('SIGKILL');
    const acked = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { id: string; seq: number });
    expect(acked.length).toBeLessThan(1000);
    // What a reader sees before the router is back: only what was flushed (.synced).
    const before = listInbox(root, 'target');
    for (const a of acked) expect(before.find((e) => e.seq === a.seq)?.id).toBe(a.id);
    // The next router opens the log: recovery. Every acknowledged entry is there at its seq,
    // the seqs are gap-free, and at most the batch in flight is there beyond them.
    const t = createFsTransport(root);
    const [next] = await t.deliver('target', [createMessage({ from: 'a', to: 'target', act: 'inform', body: 'after' })]);
    t.close();
    const after = listInbox(root, 'target');
    expect(after.map((e) => e.seq)).toEqual(Array.from({ length: after.length }, (_, i) => i + 1));
    for (const a of acked) expect(after[a.seq - 1]!.id).toBe(a.id);
    expect(after.length - 1 - acked.length).toBeLessThanOrEqual(batch);
    expect(next).toMatchObject({ status: 'delivered', seq: after.length });
  }, 60_000);
});

describe('hive.lock', () => {
  it('refuses a second owner with E_LOCKED naming the pid, and recovers after the holder is SIGKILLed', async () => {
    const root = tempRoot();
    fs.mkdirSync(root, { recursive: true });
    const child = startFixture('lock-holder.ts', [root]);
    let holderPid = 0;
    const ready = new Promise<void>((resolve) => {
      collectLines(child, (l) => {
        if (l.startsWith('locked ')) {
          holderPid = Number(l.slice(7));
          resolve();
        }
      });
    });
    await ready;
    const refused = await acquireHiveLock(root).then(
      () => null,
      (err) => err,
    );
    expect(refused).toMatchObject({ code: 'E_LOCKED', details: { pid: holderPid } });
    expect(refused.message).toContain(`pid ${holderPid}`);
    // What the holder leaves when killed in the middle of taking the lock again.
    fs.writeFileSync(path.join(root, `hive.lock.intent-${holderPid}-1`), '');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    const t0 = Date.now();
    const lock = await acquireHiveLock(root);
    expect(Date.now() - t0).toBeLessThan(HIVE_LOCK_STALE_MS); // taken over, not waited out
    expect(lock.owner.pid).toBe(process.pid);
    expect(fs.readdirSync(root).filter((n) => n.includes('.intent-'))).toEqual([]); // taken over with its lock
    await lock.release();
    expect(fs.existsSync(path.join(root, 'hive.lock'))).toBe(false);
  }, 90_000);

  it('breaks a stale lock whose owner record is missing after the stale time', async () => {
    const root = tempRoot();
    fs.mkdirSync(path.join(root, 'hive.lock'), { recursive: true });
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(root, 'hive.lock'), old, old);
    const lock = await acquireHiveLock(root, { stale: 2_000 });
    await lock.release();
  });
});

describe('a lock folder whose creator was killed before it wrote its owner record', () => {
  /** A live process to stand in for a deliverer; SIGKILLed by the test. */
  function sleeper(): ChildProcess {
    return spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  }

  it('is taken over at once when the only intent beside it is a dead process (not after the 5 s stale time)', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'target' });
    const p = hivePaths(root);
    const child = sleeper();
    // What a supervisor leaves when killed between proper-lockfile's mkdir and its owner record.
    fs.writeFileSync(`${p.lock}.intent-${child.pid}-0`, '');
    fs.mkdirSync(p.lock);
    // While that process lives, the folder is its lock.
    expect(recoverDeadLock(p.lock, p.lockOwner)).toBe(false);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const t0 = Date.now();
    const lock = await acquireHiveLock(root);
    expect(Date.now() - t0).toBeLessThan(HIVE_LOCK_STALE_MS); // at once, not after the stale time
    expect(fs.readdirSync(root).filter((n) => n.includes('.intent-'))).toEqual([]);
    await lock.release();
  });

  it('is left alone when no intent explains it (an unknown holder: only the stale time breaks it)', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'target' });
    const p = hivePaths(root);
    fs.mkdirSync(p.lock);
    expect(recoverDeadLock(p.lock, p.lockOwner)).toBe(false);
    expect(fs.existsSync(p.lock)).toBe(true);
  });
});
