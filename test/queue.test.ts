import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it, vi } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { describeTransportConformance } from './conformance/transport.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { createMessage } from '../src/protocol/message.ts';
import { moveToDone, readInbox, listInbox } from '../src/queue/inbox.ts';
import { deliver, resetInboxCache } from '../src/queue/inbox-deliver.ts';
import { readOutbox, writeOutbox, writeOutboxAsync } from '../src/queue/outbox.ts';
import { commitCursor, readCursor } from '../src/queue/cursor.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { sweepTempFiles, tempNameFor, writeFileAtomic } from '../src/fs/atomic.ts';
import { sweepDeadIntents, sweepThreadIntents } from '../src/lock/owner.ts';
import { noteAdded, trimFolder } from '../src/fs/capped.ts';
import { StateStore, encodeCommitLine, readStateFile, stateWalEnd } from '../src/agent/state-store.ts';

async function hiveWith(...ids: string[]) {
  const root = tempRoot();
  await ensureHive(root);
  for (const id of ids) await ensureAgent(root, { id, brain: { kind: 'echo' } });
  return root;
}

describeTransportConformance('filesystem', async () => createFsTransport(await hiveWith('a', 'b', 'c')));

describe('hive layout', () => {
  it('ensureHive and ensureAgent are idempotent and create the on-disk layout', async () => {
    const root = await hiveWith('alice');
    const p = agentPaths(root, 'alice');
    for (const f of [p.identity, p.memory, p.outbox, p.sent, p.inbox, p.done, p.cursor]) expect(fs.existsSync(f)).toBe(true);
    for (const f of Object.values(hivePaths(root)).filter((x) => !/lock|sock/.test(x))) {
      expect(fs.existsSync(f), f).toBe(true);
    }
    expect(fs.readFileSync(p.memory, 'utf8')).toBe('# alice\n\n## Memories\n\n');
    fs.appendFileSync(p.memory, '## 2026-01-01 — kept\n');
    commitCursor(root, 'alice', 3);
    await ensureAgent(root, { id: 'alice', name: 'Alice', role: 'planner', brain: { kind: 'echo' } });
    await ensureHive(root);
    expect(fs.readFileSync(p.memory, 'utf8')).toContain('kept');
    expect(readCursor(root, 'alice')).toBe(3);
    expect(fs.readFileSync(p.identity, 'utf8')).toContain('# Alice');
    expect(fs.readFileSync(p.identity, 'utf8')).toContain('role: planner');
  });

  it('refuses to build paths from a bad agent id', async () => {
    const root = await hiveWith();
    await expect(ensureAgent(root, { id: '../escape' })).rejects.toMatchObject({ code: 'E_BAD_AGENT_ID' });
    expect(fs.existsSync(path.join(root, 'escape'))).toBe(false);
  });
});

describe('inbox', () => {
  it('delivering the same ids twice creates no duplicates, even from a fresh process cache', async () => {
    const root = await hiveWith('a', 'b');
    const msgs = Array.from({ length: 50 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: String(i) }));
    await deliver(root, 'b', msgs);
    resetInboxCache();
    const again = await deliver(root, 'b', msgs);
    expect(again.every((o) => o.status === 'duplicate')).toBe(true);
    expect(listInbox(root, 'b')).toHaveLength(50);
  });

  it('a delivery that dies after some renames leaves no .head token another process would trust', async () => {
    const root = await hiveWith('a', 'b');
    await deliver(root, 'b', [createMessage({ from: 'a', to: 'b', act: 'inform', body: 'first' })], { holdMs: 0 });
    const head = () => fs.readFileSync(agentPaths(root, 'b').inboxHead, 'utf8').trim();
    const trusted = head(); // what another process's cache now holds
    const real = fs.renameSync;
    let renames = 0;
    const spy = vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      if (/\/\d+-[^/]*\.json$/.test(String(to)) && ++renames === 2) throw new Error('simulated crash between renames');
      real(from, to);
    });
    const batch = [1, 2, 3].map((i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `batch ${i}` }));
    try {
      await expect(deliver(root, 'b', batch, { holdMs: 0 })).rejects.toThrow('simulated crash');
    } finally {
      spy.mockRestore();
    }
    expect(listInbox(root, 'b').map((e) => e.seq)).toEqual([1, 2]); // one entry of the batch landed
    expect(head()).not.toBe(trusted);
    // The sender tries the batch again (as the router does after a crash): the entry that
    // landed is a duplicate, the rest follow it gap-free. A SIGKILL there: crash-windows.test.ts.
    resetInboxCache();
    const retried = await deliver(root, 'b', batch, { holdMs: 0 });
    expect(retried.map((o) => o.status)).toEqual(['duplicate', 'delivered', 'delivered']);
    expect(listInbox(root, 'b').map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(new Set(listInbox(root, 'b').map((e) => e.id)).size).toBe(4);
  });

  it('the dedupe horizon, at its edge: a copy is dropped while its id is among the last doneCap processed entries; beyond, it is delivered again (README)', async () => {
    const root = await hiveWith('a', 'b');
    const cap = 10;
    const msg = (body: string) => createMessage({ from: 'a', to: 'b', act: 'inform', body });
    const first = msg('first');
    let seq = 0;
    const processMore = async (messages: ReturnType<typeof msg>[]) => {
      await deliver(root, 'b', messages, { doneCap: cap });
      seq += messages.length;
      commitCursor(root, 'b', seq);
      moveToDone(root, 'b', seq, cap);
      trimFolder(agentPaths(root, 'b').done, cap); // exactly the cap (noteAdded trims lazily, to at most 110% + 16)
      resetInboxCache(); // as after a restart: only inbox/ and .done/ are known
    };
    await processMore([first, ...Array.from({ length: cap - 1 }, (_, i) => msg(`within ${i}`))]);
    expect((await deliver(root, 'b', [first], { doneCap: cap }))[0]!.status).toBe('duplicate'); // the oldest of the last `cap`
    await processMore([msg('one more')]);
    expect((await deliver(root, 'b', [first], { doneCap: cap }))[0]!.status).toBe('delivered'); // now beyond the horizon
  });

  it('remembers ids after entries moved to .done and keeps seq monotonic', async () => {
    const root = await hiveWith('a', 'b');
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'x' });
    await deliver(root, 'b', [m]);
    commitCursor(root, 'b', 1);
    moveToDone(root, 'b', 1);
    resetInboxCache();
    expect((await deliver(root, 'b', [m]))[0]!.status).toBe('duplicate');
    const [next] = await deliver(root, 'b', [createMessage({ from: 'a', to: 'b', act: 'inform', body: 'y' })]);
    expect(next).toMatchObject({ status: 'delivered', seq: 2 });
  });

  it('reads only entries after the cursor and reports garbage files as rejected', async () => {
    const root = await hiveWith('a', 'b');
    await deliver(root, 'b', [1, 2, 3].map((i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: String(i) })));
    const inbox = agentPaths(root, 'b').inbox;
    fs.writeFileSync(path.join(inbox, 'garbage.json'), 'nope');
    fs.writeFileSync(path.join(inbox, '000000000099-fake.json'), '{"half":');
    const { entries, rejected } = readInbox(root, 'b', 1);
    expect(entries.map((e) => e.seq)).toEqual([2, 3]);
    expect(rejected.map((r) => r.name).sort()).toEqual(['000000000099-fake.json', 'garbage.json']);
  });

  it('the transport dead-letters garbage it finds while reading', async () => {
    const root = await hiveWith('a', 'b');
    const t = createFsTransport(root);
    fs.writeFileSync(path.join(agentPaths(root, 'b').inbox, 'junk.txt'), 'junk');
    expect(await t.read('b', 0)).toEqual([]);
    const dl = listDeadLetters(root);
    expect(dl).toHaveLength(1);
    expect(dl[0]!.reason).toMatchObject({ source: 'agents/b/inbox/junk.txt' });
  });
});

describe('outbox and atomic writes', () => {
  it('writeOutboxAsync: a group commit of several senders, in order, whole files, no temp files; a failed batch leaves no temp files', async () => {
    const root = await hiveWith('a', 'c');
    const msgs = Array.from({ length: 6 }, (_, i) => createMessage({ from: i % 2 ? 'a' : 'c', to: 'b', act: 'inform', body: String(i) }));
    const written = await writeOutboxAsync(root, msgs);
    expect(written).toHaveLength(6);
    for (const id of ['a', 'c']) {
      const dir = agentPaths(root, id).outbox;
      const mine = msgs.filter((m) => m.from === id);
      expect(fs.readdirSync(dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
      expect(readOutbox(root, id).map((f) => (f.parsed.ok ? f.parsed.message : null))).toEqual(mine.sort((x, y) => x.id.localeCompare(y.id)));
    }
    // A name that cannot be taken (a folder is in the way): the batch fails and its temps are removed.
    const dir = agentPaths(root, 'a').outbox;
    const blocked = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'x' });
    fs.mkdirSync(path.join(dir, `${blocked.id}.json`));
    const ok = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'y' });
    await expect(writeOutboxAsync(root, [ok, blocked])).rejects.toThrow();
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('writes a batch durably and in order; temp files are swept', async () => {
    const root = await hiveWith('a');
    const msgs = Array.from({ length: 5 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: String(i) }));
    writeOutbox(root, msgs);
    const names = fs.readdirSync(agentPaths(root, 'a').outbox).filter((n) => !n.startsWith('.')).sort();
    expect(names).toEqual(msgs.map((m) => `${m.id}.json`));
    fs.writeFileSync(path.join(agentPaths(root, 'a').outbox, '.tmp-x.json-1234'), '{"torn');
    expect(sweepTempFiles(agentPaths(root, 'a').outbox)).toEqual(['.tmp-x.json-1234']);
    // A temp file of a live writer (here: the parent process) stays; names never repeat.
    const names1k = Array.from({ length: 1_000 }, () => tempNameFor(path.join(agentPaths(root, 'a').outbox, 'y.json')));
    expect(new Set(names1k).size).toBe(1_000);
    const live = names1k[0]!.replace(`-${process.pid}-`, `-${process.ppid}-`);
    fs.writeFileSync(live, '{"half');
    expect(sweepTempFiles(agentPaths(root, 'a').outbox)).toEqual([]);
    fs.rmSync(live);
    // Lock intents of a dead process: swept when no lock folder is beside them, kept when one
    // is (they let that folder be taken over at once).
    const inbox = agentPaths(root, 'a').inbox;
    const dead = 2 ** 22 + 12_345; // above pid_max: no such process
    fs.writeFileSync(path.join(inbox, `.lock.intent-${dead}-0`), '');
    fs.writeFileSync(path.join(inbox, `.lock.intent-${process.pid}-0`), '');
    expect(sweepDeadIntents(inbox)).toEqual([`.lock.intent-${dead}-0`]);
    fs.writeFileSync(path.join(inbox, `.lock.intent-${dead}-0`), '');
    fs.mkdirSync(path.join(inbox, '.lock'));
    expect(sweepDeadIntents(inbox)).toEqual([]);
    // A crashed worker thread of this (live) process: its markers go when no lock is beside them.
    fs.writeFileSync(path.join(agentPaths(root, 'a').dir, `memory.md.lock.intent-${process.pid}-77`), '');
    fs.writeFileSync(path.join(inbox, `.lock.intent-${process.pid}-77`), ''); // beside .lock
    fs.writeFileSync(path.join(inbox, `.lock.intent-${process.pid}-78`), ''); // another thread: stays
    // The palace's mine lock lives in palace/: a dead thread's marker there goes too.
    fs.mkdirSync(path.join(root, 'palace'), { recursive: true });
    fs.writeFileSync(path.join(root, 'palace', `.mine.lock.intent-${process.pid}-77`), '');
    expect(sweepThreadIntents(root, process.pid, 77)).toBe(3); // beside a lock folder too: a dead thread's intent only holds it up
    expect(fs.existsSync(path.join(agentPaths(root, 'a').dir, `memory.md.lock.intent-${process.pid}-77`))).toBe(false);
    expect(fs.readdirSync(inbox).filter((n) => n.includes('.intent-')).sort()).toEqual([`.lock.intent-${dead}-0`, `.lock.intent-${process.pid}-0`, `.lock.intent-${process.pid}-78`].sort());
  });

  it('writeFileAtomic replaces a file without a window where it is missing', async () => {
    const root = tempRoot();
    fs.mkdirSync(root, { recursive: true });
    const f = path.join(root, 'x.json');
    writeFileAtomic(f, 'a'.repeat(4096), { durable: false });
    // Another process reads the file as fast as it can while this one replaces it 2,000 times.
    const reader = spawn(
      process.execPath,
      ['-e', `const fs=require('fs');let reads=0,bad=0;const end=Date.now()+60000;
        process.stdout.write('ready\\n');
        while(Date.now()<end&&!fs.existsSync(process.argv[1]+'.stop')){let t='';try{t=fs.readFileSync(process.argv[1],'utf8')}catch{bad++;continue}
        reads++;if(t.length!==4096||t[0]!==t[4095])bad++}
        process.stdout.write(JSON.stringify({reads,bad}))`, f],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    const started = new Promise<void>((resolve) => reader.stdout.on('data', (d) => (out += String(d)).startsWith('ready\n') && resolve()));
    await started; // it reads from now on
    for (let i = 0; i < 2_000; i++) writeFileAtomic(f, (i % 2 ? 'a' : 'b').repeat(4096), { durable: false });
    fs.writeFileSync(`${f}.stop`, '');
    await new Promise((r) => reader.once('close', r));
    const { reads, bad } = JSON.parse(out.slice('ready\n'.length)) as { reads: number; bad: number };
    expect(reads).toBeGreaterThan(0);
    expect(bad).toBe(0); // never missing, never half old and half new
    expect(fs.readdirSync(root).sort()).toEqual(['x.json', 'x.json.stop']);
  });
});

describe('capped folders (.sent, .done)', () => {
  it('keep the newest names: oldest files and a stray folder go, on write, amortized', () => {
    const dir = path.join(tempRoot(), 'sent');
    fs.mkdirSync(dir, { recursive: true });
    const name = (i: number) => String(i).padStart(3, '0');
    for (let i = 0; i < 30; i++) {
      if (i === 1) {
        fs.mkdirSync(path.join(dir, name(i)));
        fs.writeFileSync(path.join(dir, name(i), 'inside'), 'x');
      } else fs.writeFileSync(path.join(dir, name(i)), String(i));
    }
    trimFolder(dir, 10);
    expect(fs.readdirSync(dir).sort()).toEqual(Array.from({ length: 10 }, (_, i) => name(20 + i)));
    // 10 + 10% + 16 = 27 entries before the next trim: the folder never grows past that.
    let most = 0;
    for (let i = 30; i < 80; i++) {
      fs.writeFileSync(path.join(dir, name(i)), String(i));
      noteAdded(dir, 1, 10);
      most = Math.max(most, fs.readdirSync(dir).length);
    }
    expect(most).toBeLessThanOrEqual(27);
    expect(fs.readdirSync(dir).sort().at(-1)).toBe(name(79));
  });
});

describe('the commit log (state.wal)', () => {
  it('a next commit torn at any byte is ignored: the last whole commit wins, and the next write goes where the torn one began', async () => {
    const root = await hiveWith('a');
    const store = new StateStore(root, 'a', 0);
    const ctx = (cursor: number) => ({ agentId: 'a', cursor, handled: cursor, turns: cursor, brainState: { n: cursor }, timers: [] });
    store.append(ctx(1), []);
    const last = store.append(ctx(2), []);
    store.close();
    const end = stateWalEnd(root, 'a');
    const next = encodeCommitLine({ ...last, commit: last.commit + 1, cursor: 3 });
    const wal = agentPaths(root, 'a').stateWal;
    const pristine = fs.readFileSync(wal);
    for (let cut = 1; cut < next.length; cut++) {
      const torn = Buffer.from(pristine);
      next.copy(torn, end, 0, cut);
      fs.writeFileSync(wal, torn);
      const state = readStateFile(root, 'a')!;
      expect(state.commit, `cut at ${cut}`).toBe(last.commit);
      expect(state.cursor).toBe(2);
      expect(stateWalEnd(root, 'a')).toBe(end);
    }
    fs.writeFileSync(wal, pristine);
  });
});

describe('the start-up sweep', () => {
  it("takes a dead process's lock intents and temp files from the palace too (a supervisor killed mid-mine left one there)", async () => {
    const { fastConfig, startHive } = await import('./helpers/hive.ts');
    const root = tempRoot();
    await ensureHive(root);
    const palace = path.join(root, 'palace');
    fs.mkdirSync(path.join(palace, 'wings'), { recursive: true });
    const dead = 2 ** 22 + 4_321; // above pid_max: no such process
    const intent = path.join(palace, `.mine.lock.intent-${dead}-5`);
    const temp = path.join(palace, 'wings', `.tmp-a.json-${dead}-500000001`);
    fs.writeFileSync(intent, '');
    fs.writeFileSync(temp, '{"half');
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'a', brain: { kind: 'echo' } }] }));
    expect(fs.existsSync(intent)).toBe(false);
    expect(fs.existsSync(temp)).toBe(false);
    await hive.close();
  });
});
