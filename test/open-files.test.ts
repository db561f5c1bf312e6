import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage } from '../src/protocol/message.ts';
import { MarkerFile } from '../src/fs/marker.ts';
import { openFiles, openFilesCaps, type Reopenable } from '../src/fs/open-files.ts';
import { StateStore, readStateFile } from '../src/agent/state-store.ts';
import { InboxWriter } from '../src/queue/inbox-writer.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { listSegments } from '../src/queue/inbox-log.ts';
import { ChaosChild } from '../src/chaos/child.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import type { PersistedAgentContext } from '../machines/agent.ts';

/** The descriptors this process holds on files under `dir`. */
function openUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

const context = (turns: number): PersistedAgentContext => ({ agentId: 'a', cursor: turns, handled: turns, turns, brainState: null, timers: [] });

afterEach(() => openFiles.setCap(64));

describe('open files are bounded per thread: what is least recently used lets its descriptor go and opens it again at its next use', () => {
  it('markers: past the cap the oldest are closed; each still writes (and is read back) after', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-open-'));
    openFiles.setCap(4);
    const markers = Array.from({ length: 10 }, (_, i) => new MarkerFile(path.join(dir, `m${i}`), 64));
    markers.forEach((m, i) => m.write({ i }));
    expect(openUnder(dir).length).toBeLessThanOrEqual(4);
    markers.forEach((m, i) => m.write({ i, again: true }));
    expect(openUnder(dir).length).toBeLessThanOrEqual(4);
    markers.forEach((_m, i) => expect(JSON.parse(fs.readFileSync(path.join(dir, `m${i}`), 'utf8'))).toEqual({ i, again: true }));
    for (const m of markers) m.close();
    expect(openUnder(dir)).toEqual([]);
  });

  it('one that is busy says no and keeps its descriptor; the rest go', () => {
    openFiles.setCap(4);
    const closed: number[] = [];
    const handles: Reopenable[] = Array.from({ length: 8 }, (_, i) => ({ closeIdle: () => (i === 0 ? false : (closed.push(i), true)) }));
    for (const h of handles) openFiles.used(h);
    expect(closed).toEqual([1, 2, 3, 4]);
    expect(openFiles.size).toBe(4);
    for (const h of handles) openFiles.closed(h);
  });

  it("an agent's commit log let go between commits goes on at the right place: every commit is there, in order", async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    openFiles.setCap(4);
    const store = new StateStore(root, 'a', 0, 64 * 1024);
    const others = Array.from({ length: 6 }, (_, i) => new MarkerFile(path.join(root, `other-${i}`), 64));
    for (let turn = 1; turn <= 12; turn++) {
      store.append(context(turn), []);
      for (const m of others) m.write({ turn }); // pushes the log's descriptor out
    }
    expect(openUnder(agentPaths(root, 'a').stateWal)).toEqual([]);
    store.close();
    for (const m of others) m.close();
    expect(readStateFile(root, 'a')).toMatchObject({ commit: 12, cursor: 12 });
    // The log holds the twelve lines one after the other (a write at a wrong offset would overwrite one).
    const lines = fs.readFileSync(agentPaths(root, 'a').stateWal, 'utf8').split('\n').filter((l) => l.includes('"commit"'));
    expect(lines.map((l) => Number(/"commit":(\d+)/.exec(l)![1]))).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });

  it('a checkpoint made while the commit log was let go (a turn too big for the log) starts the log again at its beginning', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    openFiles.setCap(4);
    const store = new StateStore(root, 'a', 0, 4_096);
    const others = Array.from({ length: 6 }, (_, i) => new MarkerFile(path.join(root, `other-${i}`), 64));
    const push = () => others.forEach((m) => m.write({}));
    for (let turn = 1; turn <= 3; turn++) store.append(context(turn), []);
    push(); // the log's descriptor goes
    store.append({ ...context(4), brainState: { pad: 'x'.repeat(3_000) } }, []); // more than half the log: a checkpoint
    push();
    store.append(context(5), []);
    store.close();
    for (const m of others) m.close();
    const wal = fs.readFileSync(agentPaths(root, 'a').stateWal, 'utf8');
    expect(wal.slice(0, wal.indexOf('\n'))).toContain('"commit":5,');
    expect(readStateFile(root, 'a')).toMatchObject({ commit: 5, cursor: 5 });
  });

  it("an inbox let go between batches goes on in the same segment, gap-free; one changed meanwhile is recovered like at a start", async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'b', brain: { kind: 'echo' } });
    openFiles.setCap(4);
    const writer = new InboxWriter(root, 'b');
    const others = Array.from({ length: 6 }, (_, i) => new MarkerFile(path.join(root, `other-${i}`), 64));
    const sent = [];
    for (let i = 0; i < 5; i++) {
      const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: `n${i}` });
      sent.push(m);
      expect(await writer.append([m])).toEqual([{ id: m.id, status: 'delivered', seq: i + 1 }]);
      for (const o of others) o.write({ i });
    }
    const inbox = agentPaths(root, 'b').inbox;
    expect(listSegments(inbox).segments).toHaveLength(1);
    // The segment changed while let go (a torn line appended by someone): recovered, then on.
    fs.appendFileSync(path.join(inbox, listSegments(inbox).segments[0]!.name), '{"torn');
    for (const o of others) o.write({ push: true });
    const last = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'after' });
    expect(await writer.append([last, sent[0]!])).toEqual([{ id: last.id, status: 'delivered', seq: 6 }, { id: sent[0]!.id, status: 'duplicate' }]);
    writer.close();
    for (const o of others) o.close();
    expect(listInbox(root, 'b').map((e) => e.id)).toEqual([...sent, last].map((m) => m.id));
  });

  it('the caps: 60 % of the limit less 64, 40 % of it to the router and 40 % shared by the agent hosts', () => {
    expect(openFilesCaps(20_000, 100)).toEqual({ router: 4_774, agentHost: 47 });
    expect(openFilesCaps(1_024, 3)).toEqual({ router: 220, agentHost: 73 });
  });

  it('a hive process limited to 512 open files answers a request to each of its 120 agents (each agent that got a message kept six files open: at 1,024 and 300 agents it stopped at EMFILE after ~90); SIGKILLed in a second round, it answers each request once', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-nofile-'));
    const root = path.join(base, 'h');
    const file = path.join(base, 'h.json');
    const n = 120;
    const agents = [...Array.from({ length: n }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' } })), { id: 'client', brain: { kind: 'external' } }];
    fs.writeFileSync(file, JSON.stringify({ root, agents, supervisor: { agentsPerWorker: 100 }, memory: { enabled: false }, audit: { enabled: false } }));
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    // `ulimit -n` in the shell sets the hard limit too: Node cannot raise it.
    const child = new ChaosChild(file, [], ['sh', '-c', `ulimit -n 512; shift; exec ${process.execPath} "$@"`, 'sh']);
    await child.start(undefined, 60_000);
    try {
      const ids = new Set<string>();
      for (let i = 0; i < n; i++) {
        const m = createMessage({ from: 'client', to: `echo-${i}`, act: 'request', body: `r${i}` });
        ids.add(m.id);
        writeOutbox(root, [m]);
      }
      const answered = () => listInbox(root, 'client').map((e) => e.message.in_reply_to).filter((r): r is string => !!r && ids.has(r));
      for (const deadline = Date.now() + 45_000; answered().length < n && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 200));
      expect(answered().length).toBe(n);
      expect(new Set(answered()).size).toBe(n);
      expect(fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8')).not.toMatch(/EMFILE/);
      // With descriptors let go and taken again on every side, a SIGKILL of the supervisor
      // while a second round is under way loses and repeats nothing: each request once, and
      // each agent's last commit counts the two requests it got.
      const second: string[] = [];
      for (let i = 0; i < n; i++) {
        const m = createMessage({ from: 'client', to: `echo-${i}`, act: 'request', body: `s${i}` });
        second.push(m.id);
        ids.add(m.id);
        writeOutbox(root, [m]);
      }
      for (const deadline = Date.now() + 30_000; answered().length < n + n / 4 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
      await child.kill();
      expect(answered().length).toBeLessThan(2 * n); // killed amid the round
      await child.start(undefined, 60_000);
      for (const deadline = Date.now() + 45_000; answered().length < 2 * n && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 200));
      await new Promise((r) => setTimeout(r, 500)); // a repeat would come now
      expect(answered().length).toBe(2 * n);
      expect(new Set(answered()).size).toBe(2 * n);
      for (let i = 0; i < n; i++) expect(readStateFile(root, `echo-${i}`)?.snapshot.context.handled).toBe(2);
    } finally {
      await child.stop(60_000);
      fs.rmSync(base, { recursive: true, force: true });
    }
  }, 120_000);
});
