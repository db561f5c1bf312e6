import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { StateStore, encodeCommitLine, readStateFile } from '../src/agent/state-store.ts';
import { restoreAgentState } from '../src/agent/restore.ts';
import { commitCursor, readCursor } from '../src/queue/cursor.ts';
import { spillUnrouted } from '../src/agent/spill.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { DEFAULT_ROUTER_SETTINGS, routeOnce } from '../src/router/route.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { CommitLogTail, readCommitted, readRouted } from '../src/queue/commit-outbox.ts';
import type { CommitHint } from '../src/queue/transport.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import type { PersistedAgentContext } from '../machines/agent.ts';
import { seededRandom } from './helpers/power-loss/crash-states.ts';

/**
 * The commit record is the outbox (docs/architecture.md): an agent actor's messages are
 * read by the router from state.wal / state.json, never written as outbox files, except
 * when the log is about to wrap over commits the router has not reached (the spill).
 */

async function hive() {
  const root = tempRoot();
  await ensureHive(root);
  for (const id of ['a', 'b']) await ensureAgent(root, { id, brain: { kind: 'echo' } });
  return root;
}

const context = (turns: number): PersistedAgentContext => ({ agentId: 'a', cursor: turns, handled: turns, turns, brainState: { pad: 'x'.repeat(400) }, timers: [] });
const note = (i: number): HiveMessage => createMessage({ from: 'a', to: 'b', act: 'inform', body: `note ${i}` });

/**
 * Agent a's commit log of 4 KiB and the router's tail of it, with commits padded to
 * 150–650 bytes at random (seeded): a wrap every few commits, older lines left past the
 * write offset. `rand(n)` is the same seeded sequence, for the test's other choices.
 */
function wrappingLog(root: string, seed: number) {
  const next = seededRandom(seed);
  const rand = (n: number) => Math.floor(next() * n);
  return {
    store: new StateStore(root, 'a', 0, 4096),
    tail: new CommitLogTail(root, 'a'),
    rand,
    padded: (commit: number) => ({ ...context(commit), brainState: { pad: 'x'.repeat(150 + rand(500)) } }),
  };
}
const route = (root: string, t = createFsTransport(root)) => routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });

describe('the commit record as the outbox', () => {
  it('a committed turn\'s messages are routed from the record: no outbox file, routed once, the progress kept in agents/<id>/routed', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0, 64 * 1024, () => spillUnrouted(root, 'a'));
    const sent = [note(1), note(2)];
    store.append(context(1), sent);
    expect(fs.readdirSync(agentPaths(root, 'a').outbox).filter((n) => n.endsWith('.json'))).toEqual([]);
    const t = createFsTransport(root);
    expect((await route(root, t)).delivered.map((d) => d.id)).toEqual(sent.map((m) => m.id));
    expect(readRouted(root, 'a')).toEqual({ commit: 1, index: 2 });
    expect((await route(root, t)).delivered).toEqual([]);
    // A new router (a restart) starts from the marker: nothing again.
    expect((await route(root)).delivered).toEqual([]);
    expect(listInbox(root, 'b').map((e) => e.id)).toEqual(sent.map((m) => m.id));
    store.close();
  });

  it('a committed message to an unknown recipient is dead-lettered with a reason naming the commit it came from, and routing goes on', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0);
    const lost = createMessage({ from: 'a', to: 'nobody', act: 'inform', body: 'to no one' });
    const fine = note(1);
    store.append(context(1), [lost, fine]);
    store.close();
    const report = await route(root);
    expect(report.delivered.map((d) => d.id)).toContain(fine.id);
    const dead = listDeadLetters(root).find((d) => d.name === `${lost.id}.json`);
    expect(dead?.reason).toMatchObject({ source: 'agents/a/state.wal (commit 1, message 1)' });
    expect(readRouted(root, 'a')).toEqual({ commit: 1, index: 2 });
  });

  it('a commit line not marked durable (agents/<id>/committed) is not routed until the actor marks it at its next start', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0);
    const first = note(1);
    store.append(context(1), [first]);
    store.close();
    const second = note(2);
    // What a process killed between the write and the flush leaves: a whole line, unmarked.
    const record = { ...readStateFile(root, 'a')!, commit: 2, lastTurn: { cursor: 2, messages: [second] } };
    const wal = agentPaths(root, 'a').stateWal;
    const fd = fs.openSync(wal, 'r+');
    const end = fs.readFileSync(wal).indexOf(0);
    fs.writeSync(fd, encodeCommitLine(record), 0, undefined, end);
    fs.closeSync(fd);
    expect((await route(root)).delivered.map((d) => d.id)).toEqual([first.id]);
    new StateStore(root, 'a', 2).markRestored(); // the actor's start: flush, then mark
    expect((await route(root)).delivered.map((d) => d.id)).toEqual([second.id]);
  });

  it('a start flushes and marks only what is not marked yet: a marked last commit, or no commit at all, costs no flush and no marker write', async () => {
    const root = await hive();
    const committed = agentPaths(root, 'a').committed;
    const writes = () => {
      const spies = [vi.spyOn(fs, 'fdatasyncSync'), vi.spyOn(fs, 'fsyncSync'), vi.spyOn(fs, 'writeSync')];
      return () => {
        const n = spies.reduce((sum, s) => sum + s.mock.calls.length, 0);
        for (const s of spies) s.mockRestore();
        return n;
      };
    };
    let done = writes();
    new StateStore(root, 'a', 0).markRestored(); // a new agent: nothing committed
    expect(done()).toBe(0);
    expect(fs.existsSync(committed)).toBe(false);
    const store = new StateStore(root, 'a', 0);
    store.append(context(1), [note(1)]);
    store.close();
    done = writes();
    new StateStore(root, 'a', 1).markRestored(); // its commit was flushed and marked
    expect(done()).toBe(0);
    // Killed between the flush and the mark: the start flushes and marks.
    fs.writeFileSync(committed, JSON.stringify({ commit: 0 }));
    done = writes();
    new StateStore(root, 'a', 1).markRestored();
    expect(done()).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(fs.readFileSync(committed, 'utf8'))).toEqual({ commit: 1 });
  });

  it('an agent\'s first commit creates its log with the line in it: two flushes (the log, its folder), no temp file, no rename', async () => {
    const root = await hive();
    const p = agentPaths(root, 'a');
    const spies = { data: vi.spyOn(fs, 'fdatasyncSync'), full: vi.spyOn(fs, 'fsyncSync'), rename: vi.spyOn(fs, 'renameSync') };
    const store = new StateStore(root, 'a', 0);
    store.append(context(1), [note(1)]);
    const counts = { data: spies.data.mock.calls.length, full: spies.full.mock.calls.length, rename: spies.rename.mock.calls.length };
    for (const spy of Object.values(spies)) spy.mockRestore();
    expect(counts).toEqual({ data: 0, full: 2, rename: 0 });
    expect(fs.statSync(p.stateWal).size).toBe(64 * 1024);
    store.append(context(2), [note(2)]); // the next one is written in place after it
    store.close();
    expect(readStateFile(root, 'a')?.commit).toBe(2);
    expect(JSON.parse(fs.readFileSync(p.committed, 'utf8'))).toEqual({ commit: 2 });
    expect(fs.readdirSync(p.dir).filter((n) => n.includes('.tmp') || n.includes('prealloc'))).toEqual([]);
  });

  it('a first commit whose log a full disk takes only part of fails, leaves no log, and the same commit is written by the retry', async () => {
    const root = await hive();
    const p = agentPaths(root, 'a');
    const store = new StateStore(root, 'a', 0);
    const realWrite = fs.writeSync;
    let calls = 0;
    // The first write takes 100 bytes without an error, the next none (the disk is full).
    const full = vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, buf: Buffer, off?: number, len?: number, pos?: number) => {
      calls += 1;
      if (calls === 1) return realWrite(fd, buf, off, 100, pos);
      if (calls === 2) return 0;
      return realWrite(fd, buf, off, len, pos);
    }) as typeof fs.writeSync);
    expect(() => store.append(context(1), [note(1)])).toThrow(/bytes written/);
    full.mockRestore();
    expect(fs.existsSync(p.stateWal)).toBe(false);
    expect(fs.existsSync(p.committed)).toBe(false);
    expect(store.append(context(1), [note(1)]).commit).toBe(1);
    store.close();
    expect(readStateFile(root, 'a')?.lastTurn.messages.map((m) => m.body)).toEqual(['note 1']);
    expect(fs.statSync(p.stateWal).size).toBe(64 * 1024);
  });

  it('a log a crash left empty or short during its creation is made again at the next commit, keeping a whole line in it', async () => {
    const root = await hive();
    const p = agentPaths(root, 'a');
    fs.writeFileSync(p.stateWal, ''); // killed between creating the log and writing it
    let store = new StateStore(root, 'a', 0);
    expect(readStateFile(root, 'a')).toBeUndefined();
    store.append(context(1), [note(1)]);
    store.close();
    expect(fs.statSync(p.stateWal).size).toBe(64 * 1024);
    expect(readStateFile(root, 'a')?.commit).toBe(1);
    // A first line written, the rest of the log not: the line is a commit and stays one.
    fs.writeFileSync(p.stateWal, fs.readFileSync(p.stateWal).subarray(0, fs.readFileSync(p.stateWal).indexOf(0)));
    store = new StateStore(root, 'a', 1);
    store.append(context(2), [note(2)]);
    store.close();
    expect(fs.statSync(p.stateWal).size).toBe(64 * 1024);
    expect(readStateFile(root, 'a')?.commit).toBe(2);
    expect(readStateFile(root, 'a')?.lastTurn.messages.map((m) => m.body)).toEqual(['note 2']);
  });

  it('the markers missing in a new hive of 10,000 agents are remembered: a second pass opens none of them', () => {
    const root = tempRoot();
    const ids = Array.from({ length: 10_000 }, (_, i) => `fresh-${i}`);
    const pass = () => {
      for (const id of ids) {
        expect(readCommitted(root, id)).toBe(-1);
        expect(readRouted(root, id)).toEqual({ commit: 0, index: 0 });
      }
    };
    pass();
    const opens = vi.spyOn(fs, 'openSync');
    pass();
    const opened = opens.mock.calls.length;
    opens.mockRestore();
    expect(opened).toBe(0);
  });

  it('a restore rewrites cursor.json only when it differs from the last commit\'s cursor', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0);
    store.append(context(4), [note(1)]);
    store.close();
    const cursorFile = agentPaths(root, 'a').cursor;
    commitCursor(root, 'a', 2); // behind: a mirror that was not written before a crash
    expect(restoreAgentState(root, 'a').context.cursor).toBe(4);
    expect(readCursor(root, 'a')).toBe(4);
    const ino = fs.statSync(cursorFile).ino; // each rewrite is a new file renamed into place
    restoreAgentState(root, 'a');
    expect(fs.statSync(cursorFile).ino).toBe(ino);
    fs.writeFileSync(cursorFile, 'not json');
    restoreAgentState(root, 'a');
    expect(readCursor(root, 'a')).toBe(4);
  });

  it('a router that falls behind loses nothing when the log wraps: the unrouted messages are spilled as outbox files first, and each is delivered once', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0, 16 * 1024, () => spillUnrouted(root, 'a'));
    const all: HiveMessage[] = [];
    for (let i = 1; i <= 60; i++) {
      const m = note(i);
      all.push(m);
      store.append(context(i), [m]); // each line ~1 KiB: the 16 KiB log wraps several times
      if (i === 10) await route(root); // the router keeps up once, then not at all
    }
    store.close();
    const spilled = fs.readdirSync(agentPaths(root, 'a').outbox).filter((n) => n.endsWith('.json'));
    expect(spilled.length).toBeGreaterThan(0);
    expect(fs.readFileSync(`${root}/log.jsonl`, 'utf8')).toContain('"type":"outbox.spilled"');
    const t = createFsTransport(root);
    for (let pass = 0; pass < 20; pass++) if ((await route(root, t)).delivered.length === 0 && pass > 2) break;
    const got = listInbox(root, 'b').map((e) => e.id);
    expect(new Set(got).size).toBe(got.length);
    expect([...got].sort()).toEqual(all.map((m) => m.id).sort());
  });

  it('the router\'s tail of a log reads each commit once, in order, across many wraps, never stopping at the older lines past the newest', async () => {
    const root = await hive();
    // A burst of 3 lines never reaches a line of its own burst (no spill needed here).
    const { store, tail, rand, padded } = wrappingLog(root, 7);
    const seen: number[] = [];
    let routed = 1;
    for (let commit = 1; commit <= 400; ) {
      const burst = 1 + rand(3); // the router reads after 1-3 commits (the log holds at least 2 lines)
      for (let k = 0; k < burst && commit <= 400; k++, commit++) store.append(padded(commit), [note(commit)]);
      const through = commit - 1;
      const records = tail.records(through, routed).filter((r) => r.commit <= through && r.commit >= routed);
      for (const r of records) seen.push(r.commit);
      routed = through + 1;
    }
    store.close();
    expect(seen).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
  });
  it('commits told by their host are taken in order with the lines read from the log, across many wraps: each commit once, with its messages', async () => {
    const root = await hive();
    const { store, tail, rand, padded } = wrappingLog(root, 11);
    const seen: string[] = [];
    let routed = 1;
    let told = 0;
    for (let commit = 1; commit <= 400; ) {
      const burst = 1 + rand(3);
      const hints: CommitHint[] = [];
      for (let k = 0; k < burst && commit <= 400; k++, commit++) {
        const prepared = store.prepare(padded(commit), [note(commit)]);
        store.write(prepared);
        // As the link tells them (a wrap too: its end is 0, the log goes on there), and at random not at all.
        if (rand(4) > 0) hints.push({ agent: 'a', commit: prepared.record.commit, end: store.logEnd, messages: prepared.record.lastTurn.messages });
        else hints.length = 0; // a commit not told breaks the run: the ones after it are not told either
      }
      const through = commit - 1;
      if (hints.length > 0 && tail.accept(hints)) told += hints.length;
      for (const r of tail.records(through, routed).filter((x) => x.commit <= through && x.commit >= routed)) seen.push(`${r.commit}:${r.lastTurn.messages[0]!.body}`);
      routed = through + 1;
    }
    store.close();
    expect(seen).toEqual(Array.from({ length: 400 }, (_, i) => `${i + 1}:note ${i + 1}`));
    expect(told).toBeGreaterThan(50); // the hints were taken, not only the log read
  });

  it('a commit its host told of is routed without reading the commit log or the committed marker', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0);
    store.append(context(1), [note(1)]);
    const t = createFsTransport(root);
    expect((await route(root, t)).delivered.map((d) => d.body)).toEqual(['note 1']); // the first look reads the log
    const prepared = store.prepare(context(2), [note(2)]);
    store.write(prepared);
    // Without its hint this commit is not there for the router: the log is gone, the marker says 1.
    fs.rmSync(agentPaths(root, 'a').stateWal);
    fs.writeFileSync(agentPaths(root, 'a').committed, '{"commit":1}\n');
    t.offerCommits([{ agent: 'a', commit: 2, end: store.logEnd, messages: prepared.record.lastTurn.messages }]);
    // A light look (only the told commit made the sender due), as the router makes for a kick with commits.
    const light = () => routeOnce({ root, transport: t, senders: ['a'], light: new Set(['a']), settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    expect((await light()).delivered.map((d) => d.body)).toEqual(['note 2']);
    expect(readRouted(root, 'a')).toEqual({ commit: 2, index: 1 });
    // A hint that does not follow what the router knows is passed by: the marker decides.
    fs.writeFileSync(agentPaths(root, 'a').committed, '{"commit":2}\n');
    t.offerCommits([{ agent: 'a', commit: 4, end: 0, messages: [note(4)] }]);
    expect((await light()).delivered).toEqual([]);
    store.close();
  });

  it('told commits with one missing between them, or a look that is not light, fall back to the marker: nothing committed waits for the poll', async () => {
    const root = await hive();
    const store = new StateStore(root, 'a', 0);
    const t = createFsTransport(root);
    const light = (limit?: number) => t.pending('a', limit, { files: false }).then((items) => items.map((i) => i.message?.body));
    const commit = (i: number, told: boolean) => {
      const prepared = store.prepare(context(i), [note(i)]);
      store.write(prepared);
      if (told) t.offerCommits([{ agent: 'a', commit: i, end: store.logEnd, messages: prepared.record.lastTurn.messages }]);
    };
    commit(1, false);
    expect(await light()).toEqual(['note 1']); // a first look reads the log
    await t.settle('a', ['@1.0']);
    // 3 was not told (its kick was lost with a thread, or it spilled): told 2 and 4 do not follow each other.
    commit(2, true);
    commit(3, false);
    commit(4, true);
    expect(await light()).toEqual(['note 2', 'note 3', 'note 4']);
    await t.settle('a', ['@4.0']);
    // Told 5, then 6 untold with a kick that could tell nothing (a full look): the marker says 6.
    commit(5, true);
    commit(6, false);
    expect((await t.pending('a')).map((i) => i.message?.body)).toEqual(['note 5', 'note 6']);
    // A told commit the router knows already (a log that went back numbers again) is no continuation: none is taken.
    const tail = new CommitLogTail(root, 'a');
    tail.records(6, 1);
    expect(tail.accept([{ agent: 'a', commit: 6, end: 0, messages: [] }, { agent: 'a', commit: 7, end: 0, messages: [] }])).toBe(false);
    expect(tail.newest).toBe(6);
    store.close();
  });

  it('a light look (files: false) leaves the outbox folder unread; a full one reads it', async () => {
    const root = await hive();
    const m = note(9);
    fs.writeFileSync(`${agentPaths(root, 'a').outbox}/${m.id}.json`, JSON.stringify(m));
    const t = createFsTransport(root);
    expect(await t.pending('a', undefined, { files: false })).toEqual([]);
    expect((await t.pending('a')).map((p) => p.message?.id)).toEqual([m.id]);
  });
});
