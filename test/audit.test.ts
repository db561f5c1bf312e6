import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { createHive } from '../src/hive.ts';
import { git } from '../src/audit/git.ts';
import { AuditTrail } from '../src/audit/trail.ts';
import { recoverIndexLock } from '../src/audit/index-lock.ts';
import { auditHistory } from '../src/audit/history.ts';
import { readLog } from '../src/log/read.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { tempRoot } from './helpers/temp.ts';
import type { Hive } from '../src/hive.ts';

const client = { id: 'client', brain: { kind: 'external' as const } };

function nextCommit(hive: Hive, predicate: (reasons: string[]) => boolean, timeoutMs = 45_000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no matching audit commit')), timeoutMs);
    const off = hive.supervisor.observer!.audit!.onCommitted((c) => {
      if (!predicate(c.reasons)) return;
      clearTimeout(timer);
      off();
      resolve(c.reasons);
    });
  });
}

async function count(root: string): Promise<number> {
  return Number((await git(root, ['rev-list', '--count', 'HEAD'])).stdout.trim());
}

describe('git audit trail', () => {
  it('a registry change becomes a commit; queues, state and locks stay out of git; hive audit shows it', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client], audit: { intervalMs: 300 } }));
    await waitFor(hive, () => (hive.supervisor.observer?.audit?.commits ?? 0) >= 1, 'the first commit');
    await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'hi' });
    const committed = nextCommit(hive, (r) => r.includes('spawned late'));
    await hive.spawn({ id: 'late', brain: { kind: 'echo' } });
    await committed;
    const show = await git(hive.root, ['show', '--name-only', '--format=%s', 'HEAD']);
    expect(show.stdout).toContain('spawned late');
    expect(show.stdout).toContain('registry.json');
    expect(show.stdout).toContain('agents/late/identity.md');
    const tracked = (await git(hive.root, ['ls-files'])).stdout.split('\n').filter(Boolean);
    expect(tracked).toEqual(expect.arrayContaining(['.gitignore', 'config.json', 'registry.json', 'agents/echo/identity.md', 'agents/echo/memory.md']));
    expect(tracked.filter((f) => /inbox|outbox|state\.|\.wal|cursor|lock|sock|log\.jsonl|kickoff|hive\.key/.test(f))).toEqual([]);
    expect((await git(hive.root, ['config', 'user.email'])).stdout.trim()).toBe('hive@localhost');

    const out = memoryIO();
    expect(await runCli(['audit', '--root', hive.root, '--json'], out.io)).toBe(0);
    const history = JSON.parse(out.stdout) as { commits: { subject: string; files: { path: string }[] }[] };
    expect(history.commits[0]!.subject).toContain('spawned late');
    expect(history.commits.at(-1)!.subject).toContain('hive started');
    const text = memoryIO();
    await runCli(['audit', '--root', hive.root], text.io);
    expect(text.stdout).toMatch(/^[0-9a-f]{10} {2}\S+ {2}hive: .*spawned late/m);
  }, 60_000);

  it('a stale .git/index.lock left by a crash is recovered; a lock held by a running git is not', async () => {
    const config = fastConfig({ agents: [client], audit: { intervalMs: 200 } });
    const first = await startHive(config);
    await waitFor(first, () => (first.supervisor.observer?.audit?.commits ?? 0) >= 1, 'the first commit');
    await first.close();
    const root = first.root;
    const lock = path.join(root, '.git', 'index.lock');

    // A git process working in the repository: its lock must be left alone.
    fs.writeFileSync(lock, '');
    const busy = spawn('git', ['hash-object', '--stdin'], { cwd: root, stdio: ['pipe', 'ignore', 'ignore'] });
    await new Promise((r) => busy.once('spawn', r));
    expect(recoverIndexLock(root)).toBe('busy');
    expect(fs.existsSync(lock)).toBe(true);
    busy.stdin!.end('x');
    await new Promise((r) => busy.once('exit', r));

    // Now the lock is stale (its git is gone): the next start commits anyway.
    const hive = createHive(config);
    await hive.start();
    try {
      const committed = nextCommit(hive, (r) => r.includes('spawned after-crash'));
      await hive.spawn({ id: 'after-crash', brain: { kind: 'echo' } });
      await committed;
      expect(fs.existsSync(lock)).toBe(false);
      expect(readLog(root).some((e) => e.type === 'audit.lock-recovered')).toBe(true);
    } finally {
      await hive.close();
    }
    expect((await auditHistory(root)).some((e) => e.subject.includes('spawned after-crash'))).toBe(true);
  }, 60_000);

  it('a held trail commits nothing until released (a starting hive holds its first commit until ready); flush still commits', async () => {
    const root = tempRoot();
    fs.mkdirSync(root, { recursive: true });
    fs.writeFileSync(path.join(root, 'registry.json'), '{}\n');
    const trail = new AuditTrail(root, { intervalMs: 50, settleMs: 20 });
    trail.hold();
    await trail.start();
    trail.note('early note');
    // Held: noted, but no commit scheduled at all (so none can start, however long we wait).
    expect(trail.scheduled).toBe(false);
    expect(trail.commits).toBe(0);
    trail.release();
    expect(trail.scheduled).toBe(true);
    const deadline = Date.now() + 10_000;
    while (trail.commits === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(trail.commits).toBe(1);
    expect((await auditHistory(root))[0]!.subject).toContain('hive started');
    trail.hold();
    fs.writeFileSync(path.join(root, 'registry.json'), '{"changed":true}\n');
    trail.note('registry changed');
    expect(trail.scheduled).toBe(false);
    expect(trail.commits).toBe(1);
    await trail.flush();
    expect(trail.commits).toBe(2);
    await trail.close();
  }, 30_000);

  it('a burst of 1,000 messages that each change memory.md makes a handful of commits, not 1,000', async () => {
    const intervalMs = 1_000;
    const root = tempRoot();
    const hive = await startHive(
      fastConfig({ root, agents: [{ id: 'diarist', brain: { kind: 'module', module: path.join(FIXTURES, 'brains', 'diarist.ts') } }, client], audit: { intervalMs } }),
    );
    await waitFor(hive, () => (hive.supervisor.observer?.audit?.commits ?? 0) >= 1, 'the first commit');
    const before = await count(root);
    const started = Date.now();
    for (let i = 0; i < 1_000; i++) {
      await hive.send({ from: 'client', to: 'diarist', act: 'inform', body: `note ${i}` });
      // send() is synchronous disk work: yield to the event loop now and then, as a real
      // sender (a socket, a timer) would, so the supervisor sees the turns as they happen.
      if (i % 10 === 9) await new Promise((r) => setImmediate(r));
    }
    await waitFor(hive, () => hive.status().find((s) => s.id === 'diarist')?.cursor === 1_000, 'all 1,000 handled', 60_000);
    await hive.close(); // final commit
    const elapsed = Date.now() - started;
    const commits = (await count(root)) - before;
    const memory = (await git(root, ['show', 'HEAD:agents/diarist/memory.md'])).stdout;
    expect(memory.split('\n').filter((l) => l.startsWith('- note ')).length).toBe(1_000);
    // At most one commit per interval (plus the final one on close): batched, not one a message.
    expect(commits).toBeLessThanOrEqual(Math.ceil(elapsed / intervalMs) + 2);
    console.log(`audit: 1,000 messages in ${elapsed} ms → ${commits} commits`);
  }, 120_000);
});
