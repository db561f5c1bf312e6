import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { readOutbox } from '../src/queue/outbox.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { HIVE_LOCK_STALE_MS, acquireHiveLock } from '../src/lock/hive-lock.ts';
import { recoverDeadLock } from '../src/lock/owner.ts';
import { INBOX_LOCK_STALE_MS, deliver } from '../src/queue/inbox-deliver.ts';
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

  it('two processes delivering 500 messages each into one inbox get 1,000 distinct gap-free seqs', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'target' });
    const go = path.join(root, 'go');
    const runs: ReturnType<typeof collectLines>[] = [];
    let ready = 0;
    const allReady = new Promise<void>((resolve) => {
      for (const [i, tag] of ['p1', 'p2'].entries()) {
        runs.push(collectLines(startFixture('inbox-deliverer.ts', [root, 'target', tag, '500', String(i === 0 ? 7 : 13), go]), (l) => l === 'ready' && ++ready === 2 && resolve()));
      }
    });
    await allReady;
    fs.writeFileSync(go, ''); // both start together
    const results = await Promise.all(runs.map((r) => r.exited));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const delivered = results.flatMap((r) => r.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { seq: number; tag: string })).sort((a, b) => a.seq - b.seq);
    const seqs = delivered.map((d) => d.seq);
    expect(seqs).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    // The two really contended: the lock changed hands more than the once it would if one
    // ran to the end before the other began. How often it changes hands is up to the
    // scheduler (a loaded CI machine saw 7 where an idle one sees dozens), so only that.
    const handovers = delivered.filter((d, i) => i > 0 && d.tag !== delivered[i - 1]!.tag).length;
    process.stdout.write(`queue-crash: the inbox lock changed hands ${handovers} times\n`);
    expect(handovers).toBeGreaterThanOrEqual(2);
    const listed = listInbox(root, 'target');
    expect(listed.map((e) => e.seq)).toEqual(seqs);
    expect(new Set(listed.map((e) => e.id)).size).toBe(1000);
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
    const p = agentPaths(root, 'target');
    const child = sleeper();
    // What a deliverer leaves when killed between proper-lockfile's mkdir and its owner record.
    fs.writeFileSync(`${p.inboxLock}.intent-${child.pid}-0`, '');
    fs.mkdirSync(p.inboxLock);
    // While that process lives, the folder is its lock.
    expect(recoverDeadLock(p.inboxLock, p.inboxLockOwner)).toBe(false);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const t0 = Date.now();
    const [outcome] = await deliver(root, 'target', [createMessage({ from: 'a', to: 'target', act: 'inform', body: 'x' })], { holdMs: 0 });
    expect(outcome).toMatchObject({ status: 'delivered', seq: 1 });
    expect(Date.now() - t0).toBeLessThan(INBOX_LOCK_STALE_MS); // at once, not after the stale time
    expect(fs.readdirSync(p.inbox).filter((n) => n.includes('.intent-'))).toEqual([]);
  });

  it('is left alone when no intent explains it (an unknown holder: only the stale time breaks it)', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'target' });
    const p = agentPaths(root, 'target');
    fs.mkdirSync(p.inboxLock);
    expect(recoverDeadLock(p.inboxLock, p.inboxLockOwner)).toBe(false);
    expect(fs.existsSync(p.inboxLock)).toBe(true);
  });
});
