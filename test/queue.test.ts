import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { describeTransportConformance } from './conformance/transport.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { createMessage } from '../src/protocol/message.ts';
import { readInbox, listInbox } from '../src/queue/inbox.ts';
import { encodeEntryLine } from '../src/queue/inbox-log.ts';
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

const fsRoots = new WeakMap<object, string>();
describeTransportConformance(
  'filesystem',
  async () => {
    const root = await hiveWith('a', 'b', 'c');
    const t = createFsTransport(root, { pollMs: 100 });
    fsRoots.set(t, root);
    return t;
  },
  async (t) => {
    const again = createFsTransport(fsRoots.get(t)!, { pollMs: 100 });
    fsRoots.set(again, fsRoots.get(t)!);
    return again;
  },
);

describe('hive layout', () => {
  it('ensureHive and ensureAgent are idempotent and create the on-disk layout', async () => {
    const root = await hiveWith('alice');
    const p = agentPaths(root, 'alice');
    for (const f of [p.identity, p.memory, p.outbox, p.sent, p.inbox, p.cursor]) expect(fs.existsSync(f)).toBe(true);
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

describe('inbox logs', () => {
  const msg = (body: string, to = 'b') => createMessage({ from: 'a', to, act: 'inform', body });
  const segmentsOf = (root: string, id = 'b') => fs.readdirSync(agentPaths(root, id).inbox).filter((n) => n.endsWith('.jsonl')).sort();

  it('delivering the same ids twice creates no duplicates, even from a new transport (a restart)', async () => {
    const root = await hiveWith('a', 'b');
    const msgs = Array.from({ length: 50 }, (_, i) => msg(String(i)));
    const first = createFsTransport(root);
    await first.deliver('b', msgs);
    first.close();
    const again = await createFsTransport(root).deliver('b', msgs);
    expect(again.every((o) => o.status === 'duplicate')).toBe(true);
    expect(listInbox(root, 'b').map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    // One segment, one line per entry, readable with a shell's tools.
    const lines = fs.readFileSync(path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl'), 'utf8').trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { message: { body: string } }).message.body)).toEqual(msgs.map((m) => m.body));
  });

  it('a torn tail at every byte offset of the last entry is cut at recovery; no acknowledged entry is lost and seqs stay gap-free', async () => {
    const root = await hiveWith('a', 'b');
    const t = createFsTransport(root);
    const acked = [msg('one'), msg('two'), msg('three')];
    await t.deliver('b', acked);
    t.close();
    const seg = path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl');
    const base = fs.statSync(seg).size;
    const lost = msg('torn');
    const line = Buffer.from(`{"seq":4,"sum":"0123456789abcdef","message":${JSON.stringify(lost)}}\n`);
    for (let k = 1; k < line.length; k++) {
      fs.truncateSync(seg, base);
      fs.appendFileSync(seg, line.subarray(0, k));
      // Written but never synced: no reader handles it.
      expect(readInbox(root, 'b', 0).entries.map((e) => e.id)).toEqual(acked.map((m) => m.id));
      const next = createFsTransport(root);
      const [o] = await next.deliver('b', [lost]); // the router's retry after the crash
      expect(o, `cut after ${k} bytes`).toMatchObject({ status: 'delivered', seq: 4 });
      const { entries, rejected } = readInbox(root, 'b', 0);
      expect(entries.map((e) => e.id)).toEqual([...acked, lost].map((m) => m.id));
      expect(rejected).toEqual([]);
      next.close();
      fs.truncateSync(seg, base);
    }
    // A half line is a write cut short: logged, not dead-lettered. The final byte (the newline) missing is one too.
    expect(listDeadLetters(root)).toEqual([]);
  });

  it('readers never go past .synced: lines a killed router wrote but did not flush are handled only after the next open flushes them', async () => {
    const root = await hiveWith('a', 'b');
    const t = createFsTransport(root);
    await t.deliver('b', [msg('flushed')]);
    t.close();
    const unflushed = msg('not flushed');
    fs.appendFileSync(path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl'), encodeEntryLine(2, unflushed));
    expect(readInbox(root, 'b', 0).entries.map((e) => e.seq)).toEqual([1]);
    const next = createFsTransport(root);
    expect(await next.deliver('b', [unflushed, msg('new')])).toMatchObject([{ status: 'duplicate' }, { status: 'delivered', seq: 3 }]);
    expect(readInbox(root, 'b', 0).entries.map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('the dedupe horizon, at its edge: a copy is dropped while its id is among the last doneCap handled entries; beyond, it is delivered again (README)', async () => {
    const root = await hiveWith('a', 'b');
    const cap = 10;
    const first = msg('first');
    let seq = 0;
    // Every batch its own segment (segmentBytes 1), so compaction can drop exactly what the horizon allows.
    const transport = () => createFsTransport(root, { doneCap: cap, segmentBytes: 1 });
    const processMore = async (messages: ReturnType<typeof msg>[]) => {
      const t = transport();
      for (const m of messages) {
        await t.deliver('b', [m]);
        commitCursor(root, 'b', (seq += 1)); // handled at once
      }
      t.close();
    };
    await processMore([first, ...Array.from({ length: cap - 1 }, (_, i) => msg(`within ${i}`))]);
    expect((await transport().deliver('b', [first]))[0]!.status).toBe('duplicate'); // the oldest of the last `cap`
    await processMore([msg('one more'), msg('and one more')]); // the roll to the second drops the first's segment
    expect(segmentsOf(root)[0]).toBe('000000000002.jsonl');
    expect((await transport().deliver('b', [first]))[0]!.status).toBe('delivered'); // now beyond the horizon
  });

  it('reads only entries after the cursor; a line that fails its check keeps its seq and is rejected with the reason', async () => {
    const root = await hiveWith('a', 'b');
    await createFsTransport(root).deliver('b', [1, 2, 3].map((i) => msg(String(i))));
    const seg = path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl');
    fs.writeFileSync(seg, fs.readFileSync(seg, 'utf8').replace('"body":"2"', '"body":"X"')); // edited by hand
    fs.writeFileSync(path.join(agentPaths(root, 'b').inbox, 'notes.txt'), 'a person left this here'); // not a segment: never read
    expect(readInbox(root, 'b', 1).entries.map((e) => e.seq)).toEqual([3]);
    const { rejected } = readInbox(root, 'b', 1);
    expect(rejected.map((r) => [r.seq, r.error.message])).toEqual([[2, expect.stringContaining('fails its checksum')]]);
    const t = createFsTransport(root);
    expect((await t.read('b', 0)).map((e) => e.seq)).toEqual([1, 3]);
    const dl = listDeadLetters(root);
    expect(dl).toHaveLength(1);
    expect(dl[0]!.reason).toMatchObject({ source: 'agents/b/inbox/000000000001.jsonl#2', code: 'E_BAD_MESSAGE' });
  });

  it('a read that cannot copy a bad line to dead-letter/ (a viewer that may not write there) still returns the good entries; the line stays in the log', async () => {
    const root = await hiveWith('a', 'b');
    await createFsTransport(root).deliver('b', [msg('1'), msg('2'), msg('3')]);
    const seg = path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl');
    fs.writeFileSync(seg, fs.readFileSync(seg, 'utf8').replace('"body":"2"', '"body":"X"'));
    const deadLetter = hivePaths(root).deadLetter;
    fs.rmSync(deadLetter, { recursive: true, force: true });
    fs.writeFileSync(deadLetter, 'not a folder'); // every copy into it fails (ENOTDIR), as a read-only hive's would
    expect((await createFsTransport(root).read('b', 0)).map((e) => e.seq)).toEqual([1, 3]);
    expect(fs.readFileSync(seg, 'utf8')).toContain('"body":"X"');
  });

  it('whole lines of junk at the end of a log are kept in dead-letter/ and cut off when the router opens it; delivery goes on gap-free', async () => {
    const root = await hiveWith('a', 'b');
    await createFsTransport(root).deliver('b', [msg('one')]);
    fs.appendFileSync(path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl'), 'junk written by hand\n');
    const [o] = await createFsTransport(root).deliver('b', [msg('two')]);
    expect(o).toMatchObject({ status: 'delivered', seq: 2 });
    expect(readInbox(root, 'b', 0)).toMatchObject({ entries: [{ seq: 1 }, { seq: 2 }], rejected: [] });
    const dl = listDeadLetters(root);
    expect(dl.map((d) => d.name)).toEqual([expect.stringMatching(/^at-\d+-of-b-000000000001\.jsonl$/)]);
    expect(fs.readFileSync(path.join(hivePaths(root).deadLetter, dl[0]!.name), 'utf8')).toBe('junk written by hand\n');
  });

  it('a reader follows the log across segments, and a symlink or FIFO named like a segment is never opened', async () => {
    const root = await hiveWith('a', 'b');
    const t = createFsTransport(root, { segmentBytes: 600 });
    const all = Array.from({ length: 12 }, (_, i) => msg(`m${i}`));
    for (const m of all) await t.deliver('b', [m]);
    expect(segmentsOf(root).length).toBeGreaterThan(2);
    const reader = createFsTransport(root);
    const got: number[] = [];
    for (let cursor = 0; cursor < 12; ) {
      const batch = await reader.read('b', cursor, 5);
      got.push(...batch.map((e) => e.seq));
      cursor = batch.at(-1)!.seq;
    }
    expect(got).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    fs.symlinkSync('/etc/passwd', path.join(agentPaths(root, 'b').inbox, '000000000900.jsonl'));
    expect((await createFsTransport(root).deliver('b', [msg('after the link')]))[0]).toMatchObject({ status: 'delivered', seq: 13 });
    expect(readInbox(root, 'b', 12).entries.map((e) => e.message.body)).toEqual(['after the link']);
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
  it("brings each inbox's .synced up to its last whole valid entry, whatever the segment's end holds (the common end read from its tail only)", async () => {
    const { reconcileInbox } = await import('../src/queue/inbox-reconcile.ts');
    const { readSynced } = await import('../src/queue/inbox-log.ts');
    const root = await hiveWith('a', 'b');
    const inbox = agentPaths(root, 'b').inbox;
    const seg = path.join(inbox, '000000000001.jsonl');
    const t = createFsTransport(root);
    // Lines long enough that the segment is bigger than the 64 KiB tail read.
    await t.deliver('b', Array.from({ length: 40 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: `${i} ${'x'.repeat(3_000)}` })));
    t.close();
    const setSynced = (seq: number) => fs.writeFileSync(path.join(inbox, '.synced'), JSON.stringify({ seq }));
    const whole = fs.readFileSync(seg);
    const cases: [string, number, Buffer, number][] = [
      ['marked through its last entry', 40, whole, 40],
      ['two whole entries past the mark (a power cut after the flush, before the marker)', 38, whole, 40],
      ['a torn last line (never marked)', 39, whole.subarray(0, whole.length - 10), 39],
      ['a whole line of junk at the end', 40, Buffer.concat([whole, Buffer.from('junk written by hand\n')]), 40],
      ['a line longer than the tail read', 40, Buffer.concat([whole, Buffer.from(encodeEntryLine(41, createMessage({ from: 'a', to: 'b', act: 'inform', body: 'y'.repeat(70_000) })))]), 41],
      ['no mark at all', 0, whole, 40],
    ];
    for (const [what, synced, content, expected] of cases) {
      fs.writeFileSync(seg, content);
      setSynced(synced);
      expect(reconcileInbox(root, 'b'), what).toBe(expected);
      expect(readSynced(inbox), what).toBe(expected);
    }
  });

  it("takes a dead process's temp files from each agent's folder, outbox, .sent and inbox, and its intents without a lock beside them, and keeps the rest", async () => {
    const { sweepOrphans } = await import('../src/supervisor/startup.ts');
    const root = await hiveWith('a');
    const p = agentPaths(root, 'a');
    const dead = 2 ** 22 + 7_654; // above pid_max: no such process
    const temps = [p.dir, p.outbox, p.sent, p.inbox].map((dir) => path.join(dir, `.tmp-x.json-${dead}-500000002`));
    for (const f of temps) fs.writeFileSync(f, '{"half');
    const live = path.join(p.inbox, `.tmp-y.json-${process.ppid}-500000003`); // its writer lives
    fs.writeFileSync(live, '{"half');
    const intent = path.join(p.dir, `memory.md.lock.intent-${dead}-0`);
    fs.writeFileSync(intent, '');
    sweepOrphans(root);
    for (const f of temps) expect(fs.existsSync(f), f).toBe(false);
    expect(fs.existsSync(intent)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    expect(fs.existsSync(p.memory)).toBe(true);
  });

  it('passes by the agents whose folders this start made (nothing of a crash can be in them) and sweeps those it found', async () => {
    const { sweepOrphans } = await import('../src/supervisor/startup.ts');
    const { ensureAgentsReporting } = await import('../src/layout/ensure.ts');
    const root = await hiveWith('found');
    const { created } = await ensureAgentsReporting(root, [{ id: 'found' }, { id: 'made' }]);
    expect([...created]).toEqual(['made']);
    expect([...(await ensureAgentsReporting(root, [{ id: 'found' }, { id: 'made' }])).created]).toEqual([]);
    const dead = 2 ** 22 + 7_655; // above pid_max: no such process
    const temp = (id: string) => path.join(agentPaths(root, id).outbox, `.tmp-x.json-${dead}-500000004`);
    for (const id of ['found', 'made']) fs.writeFileSync(temp(id), '{"half');
    sweepOrphans(root, created);
    expect(fs.existsSync(temp('found'))).toBe(false);
    expect(fs.existsSync(temp('made'))).toBe(true); // passed by (a real start cannot have one there)
    sweepOrphans(root);
    expect(fs.existsSync(temp('made'))).toBe(false);
  });

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
