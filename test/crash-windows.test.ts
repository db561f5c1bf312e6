import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { alive, logged, replies, start, until } from './helpers/crash-hive.ts';
import { fastConfig, nextEvent, startHive } from './helpers/hive.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { readCommitted } from '../src/queue/commit-outbox.ts';
import { CRASH_POINTS, CRASH_POINT_REACHED } from '../src/testing/crash-point.ts';

/**
 * Deterministic crash windows: for every step of every crash-order header, a hive stops at
 * that exact point (src/testing/crash-point.ts), is SIGKILLed there, and is started again.
 * Each case checks that the window was really hit (the point was reached, and what the
 * step leaves on disk is there), that the recovery path it relies on ran (a log line or
 * a count it leaves), and the invariants: every request answered once, handled once, and
 * the brain asked again only for a turn that was not committed.
 */

function calls(root: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = '';
  try {
    text = fs.readFileSync(path.join(agentPaths(root, 'counter').dir, 'calls.log'), 'utf8');
  } catch {
    text = '';
  }
  for (const id of text.split('\n').filter(Boolean)) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

interface Evidence {
  root: string;
  requests: HiveMessage[];
  second: number;
  calls: Map<string, number>;
}

/** What each window leaves, and what its recovery must show. */
const CASES: Record<(typeof CRASH_POINTS)[number], { garbage?: boolean; atCrash?: (root: string, requests: HiveMessage[]) => void; recovered: (e: Evidence) => void }> = {
  'commit.before-wal': {
    atCrash: (root) => expect(readStateFile(root, 'counter')).toBeUndefined(),
    // Not committed: the turn runs again, and the brain is asked again.
    recovered: (e) => expect([...e.calls.values()].some((n) => n === 2)).toBe(true),
  },
  'commit.after-wal': {
    atCrash: (root) => {
      expect(readStateFile(root, 'counter')?.lastTurn.messages.length).toBeGreaterThan(0);
      expect(fs.readdirSync(agentPaths(root, 'counter').outbox).filter((n) => n.endsWith('.json'))).toEqual([]);
    },
    // Committed: the router routes the replies from the commit record (the brain is not
    // asked again: checked for every case); no outbox file is ever written for them.
    recovered: (e) => {
      const p = agentPaths(e.root, 'counter');
      expect([...fs.readdirSync(p.outbox), ...fs.readdirSync(p.sent)].filter((n) => n.endsWith('.json'))).toEqual([]);
    },
  },
  'commit.before-mark': {
    // Flushed, not marked: the router does not route the turn's replies yet.
    atCrash: (root) => {
      expect(readStateFile(root, 'counter')?.lastTurn.messages.length).toBeGreaterThan(0);
      expect(readCommitted(root, 'counter')).toBeLessThan(readStateFile(root, 'counter')!.commit);
    },
    // The start marks it (StateStore.markRestored), then the replies are routed from the record.
    recovered: (e) => expect(readCommitted(e.root, 'counter')).toBeGreaterThanOrEqual(readStateFile(e.root, 'counter')!.commit),
  },
  'deliver.after-append': {
    // Lines written, not flushed: no reader sees them (.synced does not name them).
    atCrash: (root) => {
      expect(listInbox(root, 'counter')).toEqual([]);
      expect(fs.readdirSync(agentPaths(root, 'counter').inbox).filter((n) => n.endsWith('.jsonl'))).toHaveLength(1);
    },
    recovered: (e) => expectDuplicates(e),
  },
  'deliver.after-sync': { atCrash: (root) => expect(listInbox(root, 'counter')).toEqual([]), recovered: (e) => expectDuplicates(e) },
  'route.after-deliveries': { recovered: (e) => expectDuplicates(e) },
  'route.before-settle': { recovered: (e) => expectDuplicates(e) },
  'dead-letter.after-reason': {
    garbage: true,
    atCrash: (root) => {
      expect(fs.existsSync(path.join(agentPaths(root, 'client').outbox, 'junk.json'))).toBe(true);
      expect(fs.readdirSync(hivePaths(root).deadLetter).filter((n) => n.endsWith('junk.json.reason.json'))).toHaveLength(1);
    },
    recovered: (e) => {
      // The item was still at its source: rejected again, with a second reason file.
      const dead = fs.readdirSync(hivePaths(e.root).deadLetter);
      expect(dead.filter((n) => n.endsWith('junk.json.reason.json'))).toHaveLength(2);
      expect(listDeadLetters(e.root).filter((d) => d.name.endsWith('junk.json'))).toHaveLength(1);
    },
  },
};

/** Delivered before the kill, delivered again after it: the new router found them and dropped the copies. */
function expectDuplicates(e: Evidence): void {
  const dup = logged(e.root, 'message.duplicate', e.second).map((l) => l.id);
  expect(e.requests.some((r) => dup.includes(r.id))).toBe(true);
}

/** Ids of the messages the agent's commit record covered when it was killed. */
function committedIds(root: string): Set<string> {
  const cursor = readStateFile(root, 'counter')?.cursor ?? 0;
  return new Set(listInbox(root, 'counter').filter((e) => e.seq <= cursor).map((e) => e.id));
}

describe('the conversation keeps up with the commit record', () => {
  it('killed after a conversational turn committed but before history.json was written: the restore adds the turn back', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    const first = await start(root, 'commit.after-wal', 'cli');
    const [req] = [createMessage({ from: 'client', to: 'counter', act: 'request', body: 'remember this' })];
    writeOutbox(root, [req!]);
    const marker = path.join(root, CRASH_POINT_REACHED);
    await until(() => fs.existsSync(marker), 'the commit');
    first.child.kill('SIGKILL');
    await first.exited;
    const history = () => {
      const key = JSON.parse(fs.readFileSync(path.join(agentPaths(root, 'counter').sessions, 'current.json'), 'utf8')).key as string;
      const file = path.join(agentPaths(root, 'counter').sessions, key, 'history.json');
      if (!fs.existsSync(file)) return { messages: [] as { role: string; content: string }[] }; // no turn recorded yet
      return JSON.parse(fs.readFileSync(file, 'utf8')) as { messages: { role: string; content: string }[]; commit?: number };
    };
    expect(history().messages.some((m) => m.content.includes('remember this'))).toBe(false); // the window
    fs.rmSync(marker);
    const second = await start(root, '-', 'cli');
    await until(() => replies(root).length >= 1, 'the reply');
    second.child.kill('SIGTERM');
    await second.exited;
    const h = history();
    expect(h.messages.filter((m) => m.role === 'user' && m.content.includes('remember this'))).toHaveLength(1);
    expect(h.messages.filter((m) => m.role === 'assistant' && m.content.includes('heard "remember this"'))).toHaveLength(1);
    expect('commit' in h && h.commit).toBe(readStateFile(root, 'counter')!.commit);
    expect(logged(root, 'session.caught-up', second.pid)).toHaveLength(1);
  }, 90_000);
});

describe('provider processes die with what started them', () => {
  it('a worker ended at the turn deadline takes its provider with it; what the provider started dies when the agent restarts', async () => {
    const root = tempRoot();
    const pidsFile = path.join(path.dirname(root), 'pids');
    const sleepy = { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'sleepy.mjs')], env: { PIDS_FILE: pidsFile }, timeoutMs: 600_000 };
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'slow', brain: sleepy, turnTimeoutMs: 1_500 }, { id: 'client', brain: { kind: 'external' } }], supervisor: { poisonAfter: 1 } }));
    const crashed = nextEvent(hive, 'crashed', (e) => e.agents.includes('slow'));
    await hive.send({ from: 'client', to: 'slow', act: 'request', body: 'take your time' });
    await until(() => fs.existsSync(pidsFile), 'the provider to start');
    const [provider, grandchild] = fs.readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number) as [number, number];
    expect((await crashed).error).toMatch(/turn deadline/);
    await until(() => !alive(provider), `provider ${provider} to die with its worker`, 5_000);
    await until(() => !alive(grandchild), `its child ${grandchild} to be killed when the agent restarts`, 10_000);
  }, 60_000);

  it('a SIGKILLed supervisor takes its provider with it at once; what the provider started dies at the next start', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    const pidsFile = path.join(root, 'pids');
    const first = await start(root, '-', 'sleepy');
    writeOutbox(root, [createMessage({ from: 'client', to: 'counter', act: 'request', body: 'take your time' })]);
    await until(() => fs.existsSync(pidsFile) && fs.readFileSync(pidsFile, 'utf8').includes('\n'), 'the provider to start');
    const [provider, grandchild] = fs.readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number) as [number, number];
    expect(alive(provider) && alive(grandchild)).toBe(true);
    first.child.kill('SIGKILL');
    await first.exited;
    await until(() => !alive(provider), `provider ${provider} to die with the supervisor`, 5_000);
    fs.rmSync(pidsFile);
    const second = await start(root, '-', 'sleepy');
    await until(() => !alive(grandchild), `its child ${grandchild} to be killed at the next start`, 10_000);
    expect(logged(root, 'provider.killed', second.pid).flatMap((l) => l.pids as number[])).toContain(grandchild);
    // The turn was not committed: it runs again, in a new provider, which a graceful stop ends.
    await until(() => fs.existsSync(pidsFile), 'the turn to run again');
    const [again] = fs.readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number) as [number];
    second.child.kill('SIGTERM');
    await second.exited;
    await until(() => !alive(again), `provider ${again} to end with the hive`, 10_000);
  }, 90_000);
});

describe('deterministic crash windows (SIGKILL at each step of each crash-order header)', () => {
  it('every point of src/testing/crash-point.ts has a case here', () => {
    expect(Object.keys(CASES).sort()).toEqual([...CRASH_POINTS].sort());
  });

  for (const point of CRASH_POINTS) {
    it(`killed at ${point}: the window is hit, its recovery runs, every request is answered once`, async () => {
      const c = CASES[point];
      const root = tempRoot();
      await ensureHive(root);
      await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
      const first = await start(root, point);
      if (c.garbage) fs.writeFileSync(path.join(agentPaths(root, 'client').outbox, 'junk.json'), '{ "torn": ');
      const requests = ['one', 'two', 'three'].map((body) => createMessage({ from: 'client', to: 'counter', act: 'request', body }));
      writeOutbox(root, requests);
      const marker = path.join(root, CRASH_POINT_REACHED);
      await until(() => fs.existsSync(marker), `the hive to reach ${point}`);
      expect(fs.readFileSync(marker, 'utf8')).toBe(point);
      first.child.kill('SIGKILL');
      expect((await first.exited).signal).toBe('SIGKILL');
      c.atCrash?.(root, requests);
      const committed = committedIds(root);
      fs.rmSync(marker);

      const second = await start(root, '-');
      await until(() => replies(root).length >= requests.length, 'a reply to every request');
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);

      const byRequest = new Map<string, number>();
      for (const r of replies(root)) byRequest.set(r.in_reply_to!, (byRequest.get(r.in_reply_to!) ?? 0) + 1);
      expect(Object.fromEntries(byRequest)).toEqual(Object.fromEntries(requests.map((r) => [r.id, 1])));
      expect((readStateFile(root, 'counter')!.snapshot.context.brainState as { handled: number }).handled).toBe(requests.length);
      expect(fs.existsSync(marker)).toBe(false);
      // One brain call per committed turn: a turn committed before the kill was not asked
      // again; one that was not may have been asked once more (re-run), never more.
      const asked = calls(root);
      for (const r of requests) {
        if (committed.has(r.id)) expect(asked.get(r.id), `committed ${r.body}`).toBe(1);
        else expect(asked.get(r.id) ?? 0, r.body).toBeGreaterThanOrEqual(1);
        expect(asked.get(r.id) ?? 0, r.body).toBeLessThanOrEqual(2);
      }
      c.recovered({ root, requests, second: second.pid, calls: asked });
    }, 90_000);
  }
});
