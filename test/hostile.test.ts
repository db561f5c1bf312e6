import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { crashRouter, fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { tempDir, tempRoot } from './helpers/temp.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { formatDelivery } from '../src/cli/commands/start.ts';
import { deliverDirect as deliver } from './helpers/deliver.ts';
import { appendEvent } from '../src/log/event-log.ts';
import { remember } from '../src/memory/remember.ts';
import { JsonlJournal } from '../src/session/journal.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { tempNameFor, writeFileAtomic } from '../src/fs/atomic.ts';
import { installCliConfig, uninstallCliConfig } from '../src/brains/cli-install.ts';
import { ensureRepo, git as gitIn, HIVE_GITIGNORE } from '../src/audit/git.ts';
import { startInspector } from '../src/inspector/server.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { bigMemory } from './helpers/memory.ts';
import { condenseAgentMemory } from '../src/memory/reflect.ts';
import { assemble, planCondense, verifyCondensed } from '../src/memory/condense.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { mountProblem } from './helpers/mount.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import type { Hive } from '../src/hive.ts';
import { GodNotices } from '../src/supervisor/notices.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { useGroupModes } from '../src/fs/modes.ts';
import { createMessage } from '../src/protocol/message.ts';
import { requestJsonLine } from '../src/net/json-line.ts';
import { resolveSocketPath } from '../src/net/socket-path.ts';
import { HOOKS_SOCKET } from '../src/hooks/server.ts';
import { committedCursor } from '../src/queue/committed-cursor.ts';
import { readSendRouted } from '../src/queue/send-log.ts';
import { listSegments } from '../src/queue/inbox-log.ts';

/** The first segment of a sender's send log (where hive.send() wrote). */
const sendLogSegment = (root: string, sender: string): string => listSegments(agentPaths(root, sender).sendLog).segments[0]!.file;

/**
 * A hive folder is shared with people and programs: whatever they leave in it must not
 * stop the hive. Each test puts one bad thing in place and checks that other agents'
 * traffic keeps flowing, that nothing acknowledged is lost, and what the operator is told.
 */

const client = { id: 'client', brain: { kind: 'external' as const } };
const SESSION_KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const echo = { id: 'echo', brain: { kind: 'echo' as const } };

async function cli(args: string[]) {
  const io = memoryIO('');
  const code = await runCli(args, io.io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

function repliesTo(root: string, id: string): string[] {
  return readInbox(root, id, 0).entries.map((e) => e.message.in_reply_to ?? '');
}

/** Sends a request client → echo and waits for its reply: traffic still flows. */
async function roundTrip(hive: Hive, body: string): Promise<void> {
  const req = await hive.send({ from: 'client', to: 'echo', act: 'request', body });
  await waitFor(hive, () => repliesTo(hive.root, 'client').includes(req.id), `reply to "${body}"`, 15_000);
}

function routerRow(hive: Hive) {
  return hive.status().find((s) => s.id === 'router')!;
}

function deadLetterReasons(root: string) {
  return listDeadLetters(root).map((d) => d.reason);
}

describe('hostile hive folder: the router', () => {
  it('a stray folder under agents/ is not a recipient: a broadcast and a send to it do not stop routing', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'other', brain: { kind: 'echo' } }] }));
    const delivered: string[] = [];
    hive.on('delivered', (d) => delivered.push(`${d.agent}:${d.body}`));
    fs.mkdirSync(path.join(hivePaths(hive.root).agents, 'old-backup'));
    await hive.send({ from: 'client', to: 'broadcast', act: 'inform', body: 'to everyone' });
    await hive.send({ from: 'client', to: 'old-backup', act: 'request', body: 'anyone there?' });
    await roundTrip(hive, 'after the stray folder');
    await waitFor(hive, () => deadLetterReasons(hive.root).some((r) => r?.code === 'E_UNKNOWN_AGENT' && r.to === 'old-backup'), 'send to the stray folder dead-lettered');
    // The broadcast reached the real agents, not the stray folder.
    await waitFor(hive, () => delivered.includes('other:to everyone') && delivered.includes('echo:to everyone'), 'broadcast at other and echo');
    expect(fs.existsSync(path.join(hivePaths(hive.root).agents, 'old-backup', 'inbox'))).toBe(false);
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('an agent folder that is a symlink to a folder outside the hive is refused, not routed to', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    const outside = tempDir('hive-outside-');
    fs.mkdirSync(path.join(outside, 'inbox'));
    fs.mkdirSync(path.join(outside, 'outbox'));
    fs.symlinkSync(outside, path.join(hivePaths(hive.root).agents, 'evil'));
    await hive.send({ from: 'client', to: 'evil', act: 'request', body: 'leak?' });
    await hive.send({ from: 'client', to: 'broadcast', act: 'inform', body: 'all' });
    await roundTrip(hive, 'after the symlinked folder');
    await waitFor(hive, () => deadLetterReasons(hive.root).some((r) => r?.code === 'E_UNKNOWN_AGENT' && r.to === 'evil'), 'send to evil dead-lettered');
    expect(fs.readdirSync(path.join(outside, 'inbox'))).toEqual([]);
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('a configured agent whose folder was replaced by a symlink out of the hive: the next start writes nothing through it, marks that agent failed with the reason, and runs the others', async () => {
    const other = { id: 'other', brain: { kind: 'echo' as const } };
    const first = await startHive(fastConfig({ agents: [echo, other, client] }));
    const root = first.root;
    await first.close();
    const outside = tempDir('hive-outside-');
    fs.writeFileSync(path.join(outside, 'memory.md'), '# not the hive\n\n## Memories\n\n### 2020-01-01 — secret outside\n\nSECRET-OUTSIDE\n');
    // What the start's sweeps would have removed or rewritten through the link.
    fs.mkdirSync(path.join(outside, 'sessions', SESSION_KEY), { recursive: true });
    fs.writeFileSync(path.join(outside, 'sessions', SESSION_KEY, 'conversation.jsonl'), '{"role":"user","text":"mine"}\n');
    fs.writeFileSync(path.join(outside, '.tmp-notes-2147483646-0deadbeef'), 'mine');
    fs.mkdirSync(path.join(outside, 'inbox'));
    fs.rmSync(agentPaths(root, 'echo').dir, { recursive: true });
    fs.symlinkSync(outside, agentPaths(root, 'echo').dir);
    const hive = await startHive(fastConfig({ root, agents: [echo, other, client] }));
    expect(hive.status().find((s) => s.id === 'echo')?.status).toMatch(/^failed: agents\/echo is a symbolic link, not a folder/);
    const req = await hive.send({ from: 'client', to: 'other', act: 'request', body: 'others run' });
    await waitFor(hive, () => repliesTo(root, 'client').includes(req.id), 'other answers', 15_000);
    await expect(remember(root, 'echo', 'never outside')).rejects.toMatchObject({ code: 'E_NOT_REGULAR' });
    expect(fs.readdirSync(outside).sort()).toEqual(['.tmp-notes-2147483646-0deadbeef', 'inbox', 'memory.md', 'sessions']);
    expect(fs.readdirSync(path.join(outside, 'inbox'))).toEqual([]);
    expect(fs.readFileSync(path.join(outside, 'sessions', SESSION_KEY, 'conversation.jsonl'), 'utf8')).toBe('{"role":"user","text":"mine"}\n');
    expect(fs.readFileSync(path.join(outside, 'memory.md'), 'utf8')).not.toContain('never outside');
  });

  it('a registered agent whose inbox folder was removed: its messages are dead-lettered with a bounce, others flow', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'gone', brain: { kind: 'external' } }] }));
    await roundTrip(hive, 'directory cached');
    fs.rmSync(agentPaths(hive.root, 'gone').inbox, { recursive: true });
    const m = await hive.send({ from: 'client', to: 'gone', act: 'request', body: 'into the void' });
    await roundTrip(hive, 'after the removed inbox');
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.name === `undeliverable-gone-${m.id}.json`), 'copy dead-lettered');
    await waitFor(hive, () => readInbox(hive.root, 'god', 0).entries.some((e) => e.message.in_reply_to === m.id), 'bounce to god');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('a registered agent whose folder was replaced by a symlink out of the hive is refused (logged once), not routed to', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    await roundTrip(hive, 'ext is known');
    const outside = tempDir('hive-outside-');
    fs.mkdirSync(path.join(outside, 'inbox'));
    fs.mkdirSync(path.join(outside, 'outbox'));
    const dir = agentPaths(hive.root, 'ext').dir;
    fs.renameSync(dir, `${dir}.moved`);
    fs.symlinkSync(outside, dir);
    await hive.send({ from: 'client', to: 'ext', act: 'request', body: 'to the moved folder' });
    await roundTrip(hive, 'after the swap');
    await waitFor(hive, () => deadLetterReasons(hive.root).some((r) => r?.code === 'E_UNKNOWN_AGENT' && r.to === 'ext'), 'send to ext dead-lettered');
    expect(fs.readdirSync(path.join(outside, 'inbox'))).toEqual([]);
    // Once for the symlink (the swap is two steps, rename then symlink: a pass between them
    // may also log the folder as missing, once).
    const refusals = fs.readFileSync(hivePaths(hive.root).log, 'utf8').split('\n').filter((l) => l.includes('"type":"router.folder-refused"') && l.includes('"agent":"ext"'));
    expect(refusals.filter((l) => l.includes('symbolic link'))).toHaveLength(1);
    expect(refusals.length).toBeLessThanOrEqual(2);
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  for (const broken of ['outbox is a file', 'outbox is a FIFO', 'outbox/.sent is a file', 'outbox/.sent is a symlink out of the hive', 'outbox is a symlink out of the hive'] as const) {
    it(`an agent whose ${broken} sends nothing, loses nothing outside the hive, and stops nobody else`, async () => {
      const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
      const p = agentPaths(hive.root, 'ext');
      const outside = tempDir('hive-outside-');
      const keep = Array.from({ length: 30 }, (_, i) => `precious-${i}.txt`);
      for (const f of keep) fs.writeFileSync(path.join(outside, f), f);
      fs.writeFileSync(path.join(outside, 'from-outside.json'), JSON.stringify({ id: 'from-outside', from: 'ext', to: 'echo', act: 'request', body: 'FROM-OUTSIDE' }));
      if (broken.startsWith('outbox/.sent')) {
        fs.rmSync(p.sent, { recursive: true, force: true });
        if (broken.endsWith('file')) fs.writeFileSync(p.sent, 'not a folder');
        else fs.symlinkSync(outside, p.sent);
        // A message waiting in ext's outbox: after routing it would go to .sent.
        writeOutbox(hive.root, [createMessage({ from: 'ext', to: 'echo', act: 'inform', body: 'waits' })]);
      } else {
        fs.rmSync(p.outbox, { recursive: true, force: true });
        if (broken.endsWith('a file')) fs.writeFileSync(p.outbox, 'not a folder');
        else if (broken.endsWith('FIFO')) execFileSync('mkfifo', [p.outbox]);
        else fs.symlinkSync(outside, p.outbox);
      }
      hive.supervisor.kickRouter();
      await roundTrip(hive, `with ${broken}`);
      await roundTrip(hive, 'and again');
      expect(fs.readdirSync(outside).sort()).toEqual([...keep, 'from-outside.json'].sort());
      expect(readInbox(hive.root, 'echo', 0).entries.some((e) => e.message.body === 'FROM-OUTSIDE')).toBe(false);
      expect(fs.readFileSync(hivePaths(hive.root).log, 'utf8')).toMatch(/"type":"router\.(folder|sender)-refused".*"agent":"ext"/);
      expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
    });
  }

  for (const broken of ['a symlink out of the hive', 'a FIFO'] as const) {
    it(`a sender whose sendlog is ${broken}: hive.send() writes an outbox file instead while the router is down, nothing outside is read or written, others go on`, async () => {
      const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }], supervisor: { restart: { backoff: { initialMs: 1_500, maxMs: 1_500 } } } }));
      const p = agentPaths(hive.root, 'ext');
      await roundTrip(hive, 'before the router goes');
      // While the router runs, hive.send() hands the message to it; the send log is the way while it does not.
      await crashRouter(hive);
      const outside = tempDir('hive-outside-');
      fs.writeFileSync(path.join(outside, '000000000001.jsonl'), 'planted\n');
      fs.writeFileSync(path.join(outside, '.synced'), '{"seq":1}\n');
      if (broken === 'a FIFO') execFileSync('mkfifo', [p.sendLog]);
      else fs.symlinkSync(outside, p.sendLog);
      const sent = await hive.send({ from: 'ext', to: 'echo', act: 'inform', body: 'still sent' });
      await waitFor(hive, () => readInbox(hive.root, 'echo', 0).entries.some((e) => e.message.id === sent.id), 'delivered from an outbox file');
      await roundTrip(hive, `with ext's sendlog ${broken}`);
      expect(fs.readdirSync(outside).sort()).toEqual(['.synced', '000000000001.jsonl']);
      expect(fs.readFileSync(path.join(outside, '000000000001.jsonl'), 'utf8')).toBe('planted\n');
      expect(fs.readFileSync(hivePaths(hive.root).log, 'utf8')).toMatch(/"type":"sendlog\.refused".*"agent":"ext"/);
      expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 1 });
    });
  }

  it('god\'s inbox removed: a bounce cannot be delivered, which is logged; routing goes on', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    await roundTrip(hive, 'first');
    fs.rmSync(agentPaths(hive.root, 'god').inbox, { recursive: true });
    await hive.send({ from: 'client', to: 'nobody-here', act: 'request', body: 'bounce me' });
    await roundTrip(hive, 'after god lost its inbox');
    await waitFor(hive, () => deadLetterReasons(hive.root).some((r) => r?.to === 'nobody-here'), 'dead-lettered');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('a FIFO or a file of junk named like the next inbox segment is never opened or read as entries; the agent goes on', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    await roundTrip(hive, 'first');
    const inbox = agentPaths(hive.root, 'echo').inbox;
    execFileSync('mkfifo', [path.join(inbox, '000000000002.jsonl')]);
    fs.writeFileSync(path.join(inbox, '000000000003.jsonl'), '{"seq":3,"sum":"0000000000000000","message":{}}\n');
    fs.writeFileSync(path.join(inbox, '000000000002-old-layout.json'), '{}'); // not a segment: never read
    for (let i = 0; i < 3; i++) await roundTrip(hive, `after the FIFO in the inbox ${i}`);
    expect(deadLetterReasons(hive.root)).toEqual([]);
  });

  it('FIFOs in place of Hive\'s own files (an inbox .synced, a dead letter\'s reason) are never opened: nothing blocks', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    await roundTrip(hive, 'first');
    const head = path.join(agentPaths(hive.root, 'echo').inbox, '.synced');
    fs.rmSync(head, { force: true });
    execFileSync('mkfifo', [head]);
    const dl = hivePaths(hive.root).deadLetter;
    fs.writeFileSync(path.join(dl, 'planted.json'), '{}');
    execFileSync('mkfifo', [path.join(dl, 'planted.json.reason.json')]);
    expect(listDeadLetters(hive.root).find((d) => d.name === 'planted.json')).toEqual({ name: 'planted.json', reason: null });
    await roundTrip(hive, 'with a FIFO for .synced');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('log.jsonl replaced by a FIFO, then by a symlink out of the hive: nothing blocks, nothing outside is written; each is moved aside, named in the new log, and traffic flows', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    await roundTrip(hive, 'first');
    const log = hivePaths(hive.root).log;
    const outside = path.join(tempDir('hostile-outside-'), 'victim.txt');
    fs.writeFileSync(outside, 'mine\n');
    const plants = [
      ['FIFO', () => execFileSync('mkfifo', [log])],
      ['symbolic link', () => fs.symlinkSync(outside, log)],
    ] as const;
    for (const [kind, plant] of plants) {
      fs.rmSync(log);
      plant();
      await roundTrip(hive, `with a ${kind} for log.jsonl`);
      await waitFor(hive, () => fs.lstatSync(log).isFile() && fs.readFileSync(log, 'utf8').includes('"type":"log.moved-aside"'), `a new log after the ${kind}`, 10_000);
      const moved = JSON.parse(fs.readFileSync(log, 'utf8').split('\n').find((l) => l.includes('"type":"log.moved-aside"'))!) as { found: string; to: string };
      expect(moved.found).toMatch(kind === 'FIFO' ? /FIFO/ : /symbolic link/);
      const aside = fs.lstatSync(path.join(hive.root, moved.to));
      expect(kind === 'FIFO' ? aside.isFIFO() : aside.isSymbolicLink()).toBe(true);
    }
    expect(fs.readFileSync(outside, 'utf8')).toBe('mine\n');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
    expect(hive.status().find((s) => s.id === 'echo')).toMatchObject({ status: 'running' });
  });

  it('memory.md, .gitignore or a session transcript replaced by a symlink out of the hive is never written through: remember refuses with E_NOT_REGULAR naming the file; the audit trail replaces the link; the transcript is moved aside', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    const outside = path.join(tempDir('hostile-outside-'), 'victim.txt');
    fs.writeFileSync(outside, 'mine\n');
    const memory = agentPaths(root, 'a').memory;
    fs.rmSync(memory);
    fs.symlinkSync(outside, memory);
    await expect(remember(root, 'a', 'never outside')).rejects.toMatchObject({ code: 'E_NOT_REGULAR', message: expect.stringMatching(/agents\/a\/memory\.md is a symbolic link/) });
    fs.rmSync(memory);
    execFileSync('mkfifo', [memory]);
    await expect(remember(root, 'a', 'never into a FIFO')).rejects.toMatchObject({ code: 'E_NOT_REGULAR', message: expect.stringMatching(/FIFO/) });
    const ignore = path.join(root, '.gitignore');
    fs.rmSync(ignore, { force: true });
    fs.symlinkSync(outside, ignore);
    await ensureRepo(root);
    expect(fs.lstatSync(ignore).isFile()).toBe(true);
    expect(fs.readFileSync(ignore, 'utf8')).toBe(HIVE_GITIGNORE);
    expect(fs.readFileSync(outside, 'utf8')).toBe('mine\n');
    // A session's transcript (a JSON-lines journal) likewise: the link is moved aside, the lines go to a new file.
    const transcript = path.join(root, 'transcript.jsonl');
    fs.symlinkSync(outside, transcript);
    new JsonlJournal<{ n: number }>(transcript, 10).append([{ n: 1 }]);
    expect(fs.lstatSync(transcript).isFile()).toBe(true);
    expect(fs.readFileSync(transcript, 'utf8')).toBe('{"n":1}\n');
    expect(fs.readdirSync(root).some((n) => n.startsWith('transcript.jsonl.not-a-file-'))).toBe(true);
    expect(fs.readFileSync(outside, 'utf8')).toBe('mine\n');
  });

  it('a FIFO in an outbox is dead-lettered unopened, named as a FIFO; routing never stops', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    const fifo = path.join(agentPaths(hive.root, 'ext').outbox, 'f.json');
    execFileSync('mkfifo', [fifo]);
    await roundTrip(hive, 'after the FIFO');
    await waitFor(hive, () => !fs.existsSync(fifo), 'FIFO moved out of the outbox', 15_000);
    const reason = deadLetterReasons(hive.root).find((r) => r?.source === 'agents/ext/outbox/f.json');
    expect(reason?.error).toMatch(/FIFO/);
    expect(reason?.code).toBe('E_NOT_REGULAR');
    const moved = listDeadLetters(hive.root).find((d) => d.reason?.source === 'agents/ext/outbox/f.json')!;
    expect(fs.lstatSync(path.join(hivePaths(hive.root).deadLetter, moved.name)).isFIFO()).toBe(true);
    await roundTrip(hive, 'still flowing');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });

  it('a directory named x.json in an outbox is dead-lettered as a directory, not as bad JSON', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    fs.mkdirSync(path.join(agentPaths(hive.root, 'ext').outbox, 'x.json'));
    await roundTrip(hive, 'after the folder');
    await waitFor(hive, () => deadLetterReasons(hive.root).some((r) => r?.source === 'agents/ext/outbox/x.json'), 'x.json dead-lettered', 15_000);
    const reason = deadLetterReasons(hive.root).find((r) => r?.source === 'agents/ext/outbox/x.json')!;
    expect(reason.error).toMatch(/is a directory/);
    expect(reason.error).not.toMatch(/JSON/);
  });

  it('symlinks in an outbox are never followed: not to a valid message outside, not to /etc/passwd, not to another agent\'s state', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    const outside = path.join(tempDir('hive-outside-'), 'valid.json');
    fs.writeFileSync(outside, JSON.stringify({ id: 'outside-1', from: 'ext', to: 'echo', act: 'request', body: 'SECRET-OUTSIDE' }));
    await roundTrip(hive, 'echo has state');
    const outbox = agentPaths(hive.root, 'ext').outbox;
    fs.symlinkSync(outside, path.join(outbox, 's.json'));
    fs.symlinkSync('/etc/passwd', path.join(outbox, 'p.json'));
    fs.symlinkSync(agentPaths(hive.root, 'echo').stateWal, path.join(outbox, 'w.json'));
    await waitFor(hive, () => ['s', 'p', 'w'].every((n) => !fs.existsSync(path.join(outbox, `${n}.json`)) && !isLink(path.join(outbox, `${n}.json`))), 'links moved out', 15_000);
    await roundTrip(hive, 'after the links');
    const reasons = deadLetterReasons(hive.root).filter((r) => /agents\/ext\/outbox\/[spw]\.json/.test(String(r?.source)));
    expect(reasons).toHaveLength(3);
    for (const r of reasons) expect(r!.error).toMatch(/symbolic link/);
    // Nothing of the targets was copied anywhere: not delivered, not in a reason, the log or god's inbox.
    expect(readInbox(hive.root, 'echo', 0).entries.some((e) => e.message.id === 'outside-1')).toBe(false);
    const everywhere = [
      fs.readFileSync(hivePaths(hive.root).log, 'utf8'),
      ...readInbox(hive.root, 'god', 0).entries.map((e) => JSON.stringify(e.message)),
      ...reasons.map((r) => JSON.stringify(r)),
    ].join('\n');
    expect(everywhere).not.toContain('root:');
    expect(everywhere).not.toContain('SECRET-OUTSIDE');
    expect(everywhere).not.toContain('"snapshot"');
    expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
  });
});

describe('hostile brains: deadlines and heap limits', () => {
  const runaway = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'runaway.ts') };

  it('a brain stuck in a CPU loop hits the turn deadline: the worker is replaced, status said thinking meanwhile, poison after 3, others unaffected', async () => {
    const hive = await startHive(
      fastConfig({
        agents: [echo, client, { id: 'spinner', brain: runaway, turnTimeoutMs: 1_500 }],
        supervisor: { poisonAfter: 3, restart: { maxRestarts: 10 } },
      }),
    );
    const thread = hive.supervisor.threadOf('spinner');
    const crashes: string[] = [];
    hive.on('crashed', (e) => e.agents.includes('spinner') && crashes.push(e.error));
    const bad = await hive.send({ from: 'client', to: 'spinner', act: 'request', body: 'spin' });
    const good = await hive.send({ from: 'client', to: 'spinner', act: 'request', body: 'fine' });
    await waitFor(hive, () => (hive.status().find((s) => s.id === 'spinner')?.busyMs ?? 0) >= 500, 'status shows the turn running');
    expect(hive.status().find((s) => s.id === 'spinner')).toMatchObject({ state: 'thinking', status: 'running' });
    await roundTrip(hive, 'echo answers while spinner spins');
    await waitFor(hive, () => crashes.length >= 1, 'the deadline terminates the worker');
    expect(crashes[0]).toMatch(/turn deadline.*spinner.*1500 ms/);
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(bad.id)), 'poison after 3 deadlines', 30_000);
    await waitFor(hive, () => repliesTo(hive.root, 'client').includes(good.id), 'the next message is answered');
    expect(crashes).toHaveLength(3);
    expect(hive.supervisor.threadOf('spinner')).not.toBe(thread);
    await roundTrip(hive, 'still flowing');
  });

  it('a pooled host ended for one agent\'s deadline does not charge its pool mates: their turns are not poisoned', async () => {
    const gated = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'gated.ts') };
    const hive = await startHive(
      fastConfig({
        agents: [echo, client, { id: 'slowpoke', brain: gated, host: 'pool' }, { id: 'spinner', brain: runaway, host: 'pool', turnTimeoutMs: 1_000 }],
        supervisor: { poisonAfter: 3, restart: { maxRestarts: 10 } },
      }),
    );
    const patient = await hive.send({ from: 'client', to: 'slowpoke', act: 'request', body: 'wait for the gate' });
    await waitFor(hive, () => hive.status().find((s) => s.id === 'slowpoke')?.state === 'thinking', 'slowpoke is in its turn');
    const bad = await hive.send({ from: 'client', to: 'spinner', act: 'request', body: 'spin' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(bad.id)), 'spinner poisoned after 3 deadlines', 30_000);
    fs.writeFileSync(path.join(agentPaths(hive.root, 'slowpoke').dir, 'gate'), '');
    await waitFor(hive, () => repliesTo(hive.root, 'client').includes(patient.id), 'slowpoke answers');
    expect(listDeadLetters(hive.root).filter((d) => d.name.includes(patient.id))).toEqual([]);
  });

  it('a brain whose promise never settles hits the deadline too', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'hanger', brain: runaway, turnTimeoutMs: 1_000 }], supervisor: { poisonAfter: 1 } }));
    const bad = await hive.send({ from: 'client', to: 'hanger', act: 'request', body: 'hang' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(bad.id)), 'poison after the deadline', 30_000);
    await roundTrip(hive, 'after the hang');
  });

  it('a brain that allocates without end is stopped by the worker heap limit; poison after 3; the hive is unaffected', async () => {
    const hive = await startHive(
      fastConfig({
        agents: [echo, client, { id: 'hog', brain: runaway }],
        supervisor: { poisonAfter: 3, workerHeapMb: 64, restart: { maxRestarts: 10 } },
      }),
    );
    const crashes: string[] = [];
    hive.on('crashed', (e) => e.agents.includes('hog') && crashes.push(e.error));
    const bad = await hive.send({ from: 'client', to: 'hog', act: 'request', body: 'grow' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(bad.id)), 'poison after 3 out-of-memory crashes', 60_000);
    expect(crashes).toHaveLength(3);
    for (const c of crashes) expect(c).toMatch(/memory/i);
    expect(process.memoryUsage().rss).toBeLessThan(2 * 1024 ** 3);
    await roundTrip(hive, 'after the hog');
  });
});

describe('hostile summarizers', () => {
  const SETTINGS = { keepRecent: 5, targetBytes: 8_192, backupsKeep: 3 };

  async function memoryHive(text: string) {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'ann', name: 'Ann', brain: { kind: 'echo' } });
    fs.writeFileSync(agentPaths(root, 'ann').memory, text);
    return root;
  }

  it('a summarizer that returns one line for 149 entries is rejected: the extractive condenser keeps every date and title', async () => {
    const original = bigMemory('Ann', 154);
    const root = await memoryHive(original);
    const oneLiner = Object.assign(async () => 'Summary: condensed notes.', { label: 'one-liner' });
    const r = await condenseAgentMemory(root, 'ann', { settings: SETTINGS, summarizer: oneLiner });
    expect(r).toMatchObject({ status: 'condensed', summarizer: 'extractive', fallback: expect.stringContaining('lost their date or title') });
    const after = fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8');
    const old = planCondense(original, SETTINGS.keepRecent).old.filter((b) => b.kind === 'entry');
    expect(old).toHaveLength(149);
    for (const b of old) {
      expect(after).toContain(b.date!);
      expect(after).toContain(b.title);
    }
    expect(verifyCondensed(original, assemble(planCondense(original, SETTINGS.keepRecent), '### Summary: condensed notes.\n\n'), SETTINGS.keepRecent).join(' ')).toMatch(/149 condensed entries lost their date or title/);
  });

  it('aborted condenses do not use up backup slots: the real backups stay', async () => {
    const root = await memoryHive(bigMemory('Ann', 60));
    const file = agentPaths(root, 'ann').memory;
    const first = await condenseAgentMemory(root, 'ann', { settings: SETTINGS, summarizer: { kind: 'extractive' } });
    expect(first.status).toBe('condensed');
    // Five runs, each aborted because memory.md was rewritten by hand while it condensed.
    const editByHand = async () => fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('# Ann', '# Ann (edited by hand)'));
    fs.writeFileSync(file, bigMemory('Ann', 60, 7));
    for (let i = 0; i < 5; i++) {
      const r = await condenseAgentMemory(root, 'ann', { settings: SETTINGS, summarizer: { kind: 'extractive' }, hooks: { afterBackup: editByHand }, now: () => new Date(Date.UTC(2030, 0, 1, 0, 0, i)) });
      expect(r).toMatchObject({ status: 'aborted', reason: expect.stringContaining('rewritten') });
    }
    const backups = fs.readdirSync(hivePaths(root).backups);
    expect(backups).toHaveLength(1);
    expect(first.status === 'condensed' && fs.existsSync(first.backup)).toBe(true);
  });

  it('backups/ replaced by a symlink out of the hive: no backup is written there, nothing there is pruned, and no condense goes ahead without a backup', async () => {
    const root = await memoryHive(bigMemory('Ann', 60));
    const outside = tempDir('hostile-backups-');
    // What pruning would have removed through the link: older "backups" of ann outside the hive.
    for (let i = 0; i < 5; i++) fs.mkdirSync(path.join(outside, `2020-01-0${i + 1}`, 'ann'), { recursive: true });
    fs.rmSync(hivePaths(root).backups, { recursive: true, force: true });
    fs.symlinkSync(outside, hivePaths(root).backups);
    const before = fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8');
    await expect(condenseAgentMemory(root, 'ann', { settings: { ...SETTINGS, backupsKeep: 1 }, summarizer: { kind: 'extractive' } })).rejects.toMatchObject({ code: 'E_NOT_REGULAR' });
    expect(fs.readdirSync(outside).sort()).toEqual(['2020-01-01', '2020-01-02', '2020-01-03', '2020-01-04', '2020-01-05']);
    expect(fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8')).toBe(before);
  });
});

describe('planted symlinks and FIFOs at the names of Hive\'s own files', () => {
  /** The temp name the next atomic write of `target` in this thread will use. */
  const nextTemp = (target: string) => {
    const seen = tempNameFor(target);
    const n = parseInt(/([0-9a-f]{8})$/.exec(seen)![1]!, 16);
    return seen.replace(/[0-9a-f]{8}$/, ((n + 1) >>> 0).toString(16).padStart(8, '0'));
  };

  it('an atomic write whose temp name was planted with a symlink or a FIFO neither writes through it nor blocks', () => {
    const root = tempDir('hostile-temp-');
    const outside = path.join(tempDir('hostile-outside-'), 'victim.txt');
    fs.writeFileSync(outside, 'mine\n');
    const target = path.join(root, 'registry.json');
    fs.symlinkSync(outside, nextTemp(target));
    writeFileAtomic(target, '{"agents":[]}\n');
    expect(fs.readFileSync(target, 'utf8')).toBe('{"agents":[]}\n');
    expect(fs.readFileSync(outside, 'utf8')).toBe('mine\n');
    execFileSync('mkfifo', [nextTemp(target)]);
    writeFileAtomic(target, '{"agents":[1]}\n');
    expect(fs.readFileSync(target, 'utf8')).toBe('{"agents":[1]}\n');
    expect(fs.readdirSync(root).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  });

  it('a .git/config or hook planted in the hive does not make the audit trail\'s git run a program (fsmonitor, post-commit)', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureRepo(root);
    const marks = tempDir('hostile-git-');
    const script = (name: string) => {
      const file = path.join(marks, `${name}.sh`);
      fs.writeFileSync(file, `#!/bin/sh\ntouch ${path.join(marks, `${name}.ran`)}\n`, { mode: 0o755 });
      return file;
    };
    execFileSync('git', ['-C', root, 'config', 'core.fsmonitor', script('fsmonitor')]);
    fs.mkdirSync(path.join(root, '.git', 'hooks'), { recursive: true });
    fs.copyFileSync(script('post-commit'), path.join(root, '.git', 'hooks', 'post-commit'));
    fs.chmodSync(path.join(root, '.git', 'hooks', 'post-commit'), 0o755);
    fs.writeFileSync(path.join(root, 'registry.json'), '{"agents":[],"changed":true}\n');
    expect((await gitIn(root, ['add', '-A'])).exitCode).toBe(0);
    expect((await gitIn(root, ['commit', '-q', '--no-verify', '-m', 'x'])).exitCode).toBe(0);
    expect(fs.readdirSync(marks).filter((n) => n.endsWith('.ran'))).toEqual([]);
    // The same git without the trail's environment runs both (the plants work).
    fs.writeFileSync(path.join(root, 'registry.json'), '{"agents":[],"changed":2}\n');
    execFileSync('git', ['-C', root, 'add', '-A']);
    execFileSync('git', ['-C', root, 'commit', '-q', '--no-verify', '-m', 'y']);
    expect(fs.readdirSync(marks).filter((n) => n.endsWith('.ran')).sort()).toEqual(['fsmonitor.ran', 'post-commit.ran']);
  });

  it('an agent CLI\'s .claude folder in the agent folder replaced by a symlink: Hive\'s hooks are not written through it (E_NOT_REGULAR), not installed nor removed', () => {
    const root = tempDir('hostile-cli-');
    const cwd = path.join(root, 'agents', 'a');
    fs.mkdirSync(cwd, { recursive: true });
    const outside = tempDir('hostile-outside-');
    fs.writeFileSync(path.join(outside, 'settings.json'), '{"theme":"mine"}\n');
    fs.symlinkSync(outside, path.join(cwd, '.claude'));
    const t = { preset: 'claude' as const, cwd, root, agentId: 'a', hive: '/usr/bin/hive' };
    expect(() => installCliConfig(t)).toThrow(/agents\/a\/\.claude is a symbolic link, not a folder/);
    expect(() => uninstallCliConfig(t)).toThrow(/E_NOT_REGULAR|symbolic link/);
    expect(fs.readFileSync(path.join(outside, 'settings.json'), 'utf8')).toBe('{"theme":"mine"}\n');
    // A working directory outside the hive is the user's: written as it is.
    const repo = tempDir('hostile-repo-');
    expect(installCliConfig({ ...t, cwd: repo }).length).toBeGreaterThan(0);
  });

  it('an agent\'s state.wal removed by hand: it goes on from its checkpoint, and the replies of its new commits (numbers the router had routed before) are delivered', async () => {
    const first = await startHive(fastConfig({ agents: [echo, client] }));
    for (let i = 0; i < 3; i++) await roundTrip(first, `before ${i}`);
    const root = first.root;
    await first.close();
    fs.rmSync(agentPaths(root, 'echo').stateWal);
    const hive = await startHive(fastConfig({ root, agents: [echo, client] }));
    await roundTrip(hive, 'after the log was removed');
    await roundTrip(hive, 'and again');
    expect(fs.readFileSync(hivePaths(root).log, 'utf8')).toMatch(/"type":"router.log-went-back","agent":"echo"/);
  });

  it('a file or FIFO at a lock\'s name (registry.json.lock, hive.lock) is moved aside, not waited out: the hive starts at once', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    const root = hive.root;
    await hive.close();
    fs.writeFileSync(path.join(root, 'registry.json.lock'), 'not a lock');
    execFileSync('mkfifo', [path.join(root, 'hive.lock')]);
    const t0 = Date.now();
    const again = await startHive(fastConfig({ root, agents: [echo, client] }));
    expect(Date.now() - t0).toBeLessThan(5_000); // a stale lock is waited out for 5–10 s
    await roundTrip(again, 'after the planted locks');
    const aside = fs.readdirSync(root).filter((n) => n.includes('.not-a-folder-')).sort();
    expect(aside.map((n) => n.replace(/-\d+-\d+$/, ''))).toEqual(['hive.lock.not-a-folder', 'registry.json.lock.not-a-folder']);
  });

  it('a committed marker left behind what was routed while the log holds newer commits (a power cut before the agent starts again) is stale, not a log that went back: nothing is routed again', async () => {
    const first = await startHive(fastConfig({ agents: [echo, client] }));
    for (let i = 0; i < 3; i++) await roundTrip(first, `before ${i}`);
    const root = first.root;
    await first.close();
    const p = agentPaths(root, 'echo');
    const routedBefore = fs.readFileSync(p.routed, 'utf8');
    const logged = () => fs.readFileSync(hivePaths(root).log, 'utf8').includes('router.log-went-back');
    fs.writeFileSync(p.committed, '{"commit":1}'); // stale: the log holds commits 2 and 3
    const transport = createFsTransport(root, { pollMs: 60_000 });
    expect(await transport.pending('echo')).toEqual([]);
    expect(fs.readFileSync(p.routed, 'utf8')).toBe(routedBefore);
    expect(logged()).toBe(false);
    // The same marker with the log gone is a log that went back: logged, the mark set to its end.
    fs.rmSync(p.stateWal);
    fs.rmSync(p.state, { force: true });
    const fresh = createFsTransport(root, { pollMs: 60_000 });
    expect(await fresh.pending('echo')).toEqual([]);
    expect(logged()).toBe(true);
    expect(JSON.parse(fs.readFileSync(p.routed, 'utf8'))).toMatchObject({ commit: 1 });
  });

  it('a folder named like a temp file at the hive root does not stop the start', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    const root = hive.root;
    await hive.close();
    fs.mkdirSync(path.join(root, '.tmp-registry.json-2147483646-0deadbeef'));
    const again = await startHive(fastConfig({ root, agents: [echo, client] }));
    await roundTrip(again, 'after a folder named like a temp file');
    expect(fs.existsSync(path.join(root, '.tmp-registry.json-2147483646-0deadbeef'))).toBe(true);
  });

  // What the agent's state is after its log was taken away is another matter (as after `rm
  // state.wal`, it starts again from its checkpoint); here: nothing outside is written.
  it('an agent\'s state.wal replaced by a symlink out of the hive: the next commit writes a new log in its place, nothing outside', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    await roundTrip(hive, 'first');
    const root = hive.root;
    await hive.close();
    const outside = path.join(tempDir('hostile-outside-'), 'victim.bin');
    fs.writeFileSync(outside, Buffer.alloc(64 * 1024, 7)); // the size of a log: it would have been taken for one
    const wal = agentPaths(root, 'echo').stateWal;
    fs.rmSync(wal);
    fs.symlinkSync(outside, wal);
    const again = await startHive(fastConfig({ root, agents: [echo, client] }));
    const req = await again.send({ from: 'client', to: 'echo', act: 'request', body: 'after the link' });
    await waitFor(again, () => readInbox(root, 'echo', 0).entries.some((e) => e.message.id === req.id) && (again.status().find((s) => s.id === 'echo')?.cursor ?? 0) >= 2, 'the request handled', 15_000);
    expect(fs.lstatSync(wal).isFile()).toBe(true);
    expect(fs.readFileSync(outside).equals(Buffer.alloc(64 * 1024, 7))).toBe(true);
  });
});

describe('a hive on a shared machine', () => {
  /** Every entry under `root` (lstat: links are not followed) whose mode gives `others` any access. */
  function tooOpen(root: string, others: number): string[] {
    const bad: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        const st = fs.lstatSync(p);
        if (st.isSymbolicLink()) continue;
        if ((st.mode & others) !== 0) bad.push(`${path.relative(root, p)} ${(st.mode & 0o777).toString(8)}`);
        if (st.isDirectory()) walk(p);
      }
    };
    if ((fs.statSync(root).mode & others) !== 0) bad.push(`(root) ${(fs.statSync(root).mode & 0o777).toString(8)}`);
    walk(root);
    return bad;
  }

  it('with the usual umask 022, the hive root and everything Hive creates are owner-only, the send log too', async () => {
    const previous = process.umask(0o022);
    try {
      const hive = await startHive(fastConfig({ agents: [echo, client], audit: { enabled: true, intervalMs: 200 }, supervisor: { restart: { backoff: { initialMs: 1_500, maxMs: 1_500 } } } }));
      await roundTrip(hive, 'straight through the router');
      await crashRouter(hive); // hive.send() writes the send log until the router is back
      const sent = await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'private' });
      await waitFor(hive, () => repliesTo(hive.root, 'client').includes(sent.id), 'reply');
      await waitFor(hive, () => fs.existsSync(path.join(hive.root, '.git', 'HEAD')), 'audit repository');
      await hive.supervisor.observer?.audit?.flush();
      expect(tooOpen(hive.root, 0o077)).toEqual([]);
      expect(fs.statSync(hive.root).mode & 0o777).toBe(0o700);
      // hive.send() with the router down wrote the send log, not an outbox file: its segment is the owner's alone.
      expect(fs.statSync(sendLogSegment(hive.root, 'client')).mode & 0o777).toBe(0o600);
    } finally {
      process.umask(previous);
    }
  });

  it('permissions: group shares the hive with the owner\'s group, read-only; never with others', async () => {
    const previous = process.umask(0o022);
    try {
      const hive = await startHive(fastConfig({ agents: [echo, client], permissions: 'group', supervisor: { restart: { backoff: { initialMs: 1_500, maxMs: 1_500 } } } }));
      await roundTrip(hive, 'shared');
      await crashRouter(hive); // hive.send() writes the send log until the router is back
      const sent = await hive.send({ from: 'client', to: 'echo', act: 'inform', body: 'for the group' });
      await waitFor(hive, () => readSendRouted(hive.root, 'client') >= 1, 'routed');
      expect(tooOpen(hive.root, 0o007)).toEqual([]);
      expect(fs.statSync(hive.root).mode & 0o777).toBe(0o750);
      expect(fs.statSync(agentPaths(hive.root, 'echo').stateWal).mode & 0o777).toBe(0o640);
      expect(fs.statSync(sendLogSegment(hive.root, 'client')).mode & 0o777).toBe(0o640);
      expect(sent.id).toBeTruthy();
      expect(fs.statSync(path.join(hive.root, 'hive.key')).mode & 0o777).toBe(0o600);
    } finally {
      process.umask(previous);
      useGroupModes(false);
    }
  });
});

describe('hostile text on the operator\'s terminal', () => {
  it('ESC sequences and control characters in a subject are printed escaped by hive start, inbox, ask and log', async () => {
    const evil = 'Hi\x1b]0;pwned\x07\x1b[2J\x1b[1A\rfake\u202eeulav\x9b';
    const d = { agent: 'echo', seq: 1, id: 'x', from: 'client', to: 'echo', act: 'request', subject: evil, body: 'b\x1b[31m', needs_human: false, requires_reply: true, in_reply_to: null, conversation: 'x' } as const;
    const shown = [formatDelivery(d)];
    const root = tempRoot();
    expect((await cli(['init', '--root', root])).code).toBe(0);
    await deliver(root, 'god', [createMessage({ from: 'writer', to: 'god', act: 'query', subject: evil, body: `body ${evil}`, needs_human: true })]);
    shown.push((await cli(['inbox', 'god', '--root', root])).stdout, (await cli(['ask', '--root', root])).stdout);
    appendEvent(root, { type: `evil\x1b[2J`, agent: 'a\x1b[1A' });
    shown.push((await cli(['log', '--root', root])).stdout);
    for (const out of shown) {
      expect(out).toContain('\\x1b');
      // No control character but newline reaches the terminal, nor a bidi override.
      expect(out.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    }
  });
});

describe('hostile requests to the inspector', () => {
  it('a malformed cookie is a 400 that says so, never a 500; the inspector keeps answering', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client] }));
    const inspector = await startInspector(hive);
    try {
      const base = `http://127.0.0.1:${inspector.port}`;
      const bad = await fetch(`${base}/api/state`, { headers: { cookie: 'hive_token=%E0%A4%A' } });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ ok: false, error: { code: 'E_BAD_ARGS', message: expect.stringContaining('Malformed cookie hive_token') } });
      expect((await fetch(inspector.url)).status).toBe(200);
    } finally {
      await inspector.close();
    }
  });
});

describe('hostile hook callers', () => {
  it('a caller with no token, or with one agent\'s token claiming to be god, is refused with nothing moved; traffic flows', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    const sock = resolveSocketPath(hive.root, HOOKS_SOCKET);
    await hive.send({ from: 'echo', to: 'god', act: 'inform', body: 'for the people' });
    await waitFor(hive, () => readInbox(hive.root, 'god', 0).entries.length === 1, 'god has a message');
    const bare = await requestJsonLine(sock, { hook_event_name: 'Stop', agent_id: 'god' }, 5_000);
    expect(bare).toMatchObject({ ok: false, error: { code: 'E_HOOK', message: expect.stringContaining('has no agent_token') } });
    const asGod = await requestJsonLine(sock, { hook_event_name: 'Stop', agent_id: 'god', agent_token: hive.agentToken('ext') }, 5_000);
    expect(asGod).toMatchObject({ ok: false, error: { message: expect.stringContaining('not the token of agent "god"') } });
    expect(JSON.stringify(asGod)).not.toContain('for the people');
    const ack = await requestJsonLine(sock, { hook_event_name: 'Ack', agent_id: 'god', ack: 'god:1', agent_token: 'f'.repeat(64) }, 5_000);
    expect(ack).toMatchObject({ ok: false });
    expect(committedCursor(hive.root, 'god')).toBe(0);
    // ext with its own token is served; the token is in no file of the hive.
    expect(await requestJsonLine(sock, { hook_event_name: 'Notification', agent_id: 'ext', agent_token: hive.agentToken('ext') }, 5_000)).toEqual({ ok: true });
    const log = fs.readFileSync(hivePaths(hive.root).log, 'utf8');
    expect(log).not.toContain(hive.agentToken('ext'));
    expect(fs.statSync(path.join(hive.root, 'hive.key')).mode & 0o777).toBe(0o600);
    await roundTrip(hive, 'after the forged hooks');
  });

  it('2,000 hook connections at once are all accepted and answered (the listen backlog holds a burst)', async () => {
    const hive = await startHive(fastConfig({ agents: [echo, client, { id: 'ext', brain: { kind: 'external' } }] }));
    const sock = resolveSocketPath(hive.root, HOOKS_SOCKET);
    const line = `${JSON.stringify({ hook_event_name: 'Notification', agent_id: 'ext', agent_token: hive.agentToken('ext') })}\n`;
    const one = () =>
      new Promise<string>((resolve) => {
        const c = net.createConnection(sock);
        let out = '';
        c.on('connect', () => c.write(line));
        c.on('data', (d) => (out += String(d)));
        c.on('close', () => resolve(out));
        c.on('error', (err) => resolve(`error ${(err as NodeJS.ErrnoException).code}`));
      });
    const answers = await Promise.all(Array.from({ length: 2_000 }, one));
    const failed = answers.filter((a) => a.trim() !== '{"ok":true}');
    expect(failed.length, failed.slice(0, 3).join(' | ')).toBe(0);
    await roundTrip(hive, 'after the burst');
  });
});

const noMount = mountProblem();

/** Fills the file system holding `dir` until a write fails with ENOSPC; returns the filler's path. */
function fillDisk(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
  // Small writes too, until not even a page is left.
  const fd2 = fs.openSync(`${filler}-2`, 'w');
  try {
    for (;;) fs.writeSync(fd2, Buffer.alloc(512, 1));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd2);
  }
  return filler;
}

describe('hostile disk', () => {
  it('a notice to god that meets a full disk is written once there is room, and one never written is logged as lost', async () => {
    const root = tempDir('hive-notices-');
    fs.writeFileSync(path.join(root, 'log.jsonl'), '');
    let full = true;
    const written: string[] = [];
    const kicked: string[][] = [];
    const notices = new GodNotices(root, (s) => kicked.push(s), (n) => {
      if (full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      written.push(n.id);
    });
    const notice = createMessage({ from: 'hive', to: 'god', act: 'inform', subject: 'agent(s) w failed', body: 'x' });
    notices.post(notice);
    expect(notices.pending()).toBe(1);
    full = false;
    await new Promise<void>((resolve) => {
      const t = setInterval(() => notices.pending() === 0 && (clearInterval(t), resolve()), 20);
    });
    expect(written).toEqual([notice.id]);
    expect(kicked).toEqual([['hive']]);
    full = true;
    notices.post(createMessage({ from: 'hive', to: 'god', act: 'inform', subject: 'never written', body: 'y' }));
    notices.close();
    expect(fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8')).toMatch(/"type":"hive.notice-lost".*"subject":"never written"/);
  });

  it.skipIf(noMount !== null)(`a full disk pauses the actors that write (status "paused: disk full"); freed space resumes them with no restart and nothing lost${noMount ? ` (skipped: ${noMount})` : ''}`, async () => {
    const mount = tempDir('hive-tmpfs-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mount]);
    try {
      const gated = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'gated.ts') };
      const hive = await startHive(
        fastConfig({ root: path.join(mount, 'hive'), agents: [echo, client, { id: 'g', brain: gated }, { id: 'fragile', brain: { kind: 'echo' } }], supervisor: { restart: { maxRestarts: 1 } } }),
      );
      const events: string[] = [];
      for (const name of ['crashed', 'failed', 'restarted'] as const) hive.on(name, (e) => e.agents.includes('fragile') || events.push(`${name}:${JSON.stringify(e)}`));
      const paused = new Set<string>();
      hive.on('paused', (e) => paused.add(`${e.actor}:${e.reason}`));
      await roundTrip(hive, 'before the disk fills');
      const held = await hive.send({ from: 'client', to: 'g', act: 'request', body: 'held at the gate' });
      await waitFor(hive, () => hive.status().find((s) => s.id === 'g')?.state === 'thinking', 'g is thinking');
      // A message written by hand, bigger than the slack in the last page of echo's inbox
      // log, so the router cannot append it until there is room.
      const staged = path.join(mount, 'hive', 'staged.json');
      fs.writeFileSync(staged, JSON.stringify({ id: 'by-hand-full', from: 'client', to: 'echo', act: 'request', body: `while full ${'x'.repeat(16_000)}` }));
      const filler = fillDisk(mount);
      fs.writeFileSync(path.join(agentPaths(hive.root, 'g').dir, 'gate'), ''); // an empty file: no data blocks
      fs.renameSync(staged, path.join(agentPaths(hive.root, 'client').outbox, 'by-hand-full.json'));
      await waitFor(hive, () => hive.status().find((s) => s.id === 'g')?.status === 'paused: disk full', 'g paused: disk full', 20_000);
      await waitFor(hive, () => routerRow(hive).status === 'paused: disk full', 'router paused: disk full', 20_000);
      expect([...paused]).toEqual(expect.arrayContaining(['g:disk full', 'router:disk full']));
      // An agent that fails while the disk is full: god's notice waits for room.
      const failed = nextEvent(hive, 'failed', (e) => e.agents.includes('fragile'));
      await hive.supervisor.workerOf('fragile')?.terminate();
      await waitFor(hive, () => hive.status().find((s) => s.id === 'fragile')?.status === 'running', 'fragile restarted');
      await hive.supervisor.workerOf('fragile')?.terminate();
      await failed;
      expect(readInbox(hive.root, 'god', 0).entries.some((e) => e.message.subject === 'agent(s) fragile failed')).toBe(false);
      fs.rmSync(filler);
      fs.rmSync(`${filler}-2`);
      await waitFor(hive, () => repliesTo(hive.root, 'client').includes(held.id), 'the held turn is answered once the disk has room', 20_000);
      await waitFor(hive, () => repliesTo(hive.root, 'client').includes('by-hand-full'), 'the hand-written message is answered', 20_000);
      await roundTrip(hive, 'after the disk had room again');
      await waitFor(hive, () => readInbox(hive.root, 'god', 0).entries.some((e) => e.message.subject === 'agent(s) fragile failed'), 'god told once there is room');
      // A resumed actor reports so on its own next step: routing works already, its status follows.
      await waitFor(hive, () => routerRow(hive).status === 'running' && hive.status().find((s) => s.id === 'g')?.status === 'running', 'router and g report running again', 10_000);
      expect(hive.status().find((s) => s.id === 'g')).toMatchObject({ status: 'running', restarts: 0 });
      expect(routerRow(hive)).toMatchObject({ status: 'running', restarts: 0 });
      expect(events).toEqual([]);
      expect(repliesTo(hive.root, 'client').filter((id) => id === held.id)).toHaveLength(1);
      // The brain was asked once: waiting out the disk repeats the commit's writes, not the turn.
      expect(readInbox(hive.root, 'client', 0).entries.find((e) => e.message.in_reply_to === held.id)?.message.body).toBe('passed: held at the gate (call 1)');
      await hive.close();
    } finally {
      execFileSync('umount', ['-l', mount]);
    }
  });
});

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
