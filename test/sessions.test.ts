import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES, collectLines, startFixture } from './helpers/fixture.ts';
import { tempRoot } from './helpers/temp.ts';
import { readInbox, listInbox } from '../src/queue/inbox.ts';
import { currentSession } from '../src/session/session.ts';
import { sessionPaths } from '../src/session/paths.ts';
import { readJsonl } from '../src/session/journal.ts';
import { readArchive, archiveSession, clearSession, sweepOrphanSessions } from '../src/session/archive.ts';
import { createSnapshot, importSnapshot, listSnapshots } from '../src/session/snapshots.ts';
import { runSessionAction } from '../src/session/actions.ts';
import { readRegistry } from '../src/registry/registry.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import type { HiveConfigInput } from '../src/config/schema.ts';

const answerCli = { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'answer.mjs')] };
const client = { id: 'client', brain: { kind: 'external' as const } };
const replies = (root: string) => readInbox(root, 'client', 0).entries.map((e) => e.message.body);
const files = (root: string, id: string) => sessionPaths(root, id, currentSession(root, id).key);

async function talk(config: HiveConfigInput, bodies: string[]) {
  const hive = await startHive(config);
  for (const body of bodies) {
    const before = replies(hive.root).length;
    await hive.send({ from: 'client', to: 'cli', act: 'request', body });
    await waitFor(hive, () => replies(hive.root).length === before + 1, `reply to ${body}`);
  }
  return hive;
}

describe('conversation restore cascade', () => {
  it('intact history → full fidelity: the brain sees its earlier turns after a restart', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    await (await talk(config, ['one'])).close();
    const hive = await talk(config, ['two']);
    expect(replies(hive.root).at(-1)).toBe('heard "two" (history 2)');
    expect(hive.status().find((s) => s.id === 'cli')?.conversation).toBe('full');
    expect(fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8')).toMatch(/"type":"session.restored","agent":"cli".*"mode":"full"/);
  });

  it('corrupt history.json → tail brief: briefed with the newest turns, not remembering them', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    const first = await talk(config, ['one']);
    await first.close();
    fs.writeFileSync(files(first.root, 'cli').history, '{ torn');
    const hive = await talk(config, ['two', 'three']);
    expect(replies(hive.root).slice(-2)).toEqual(['heard "two" (history 0) [briefed]', 'heard "three" (history 2)']);
    expect(hive.status().find((s) => s.id === 'cli')?.conversation).toBe('tail');
  });

  it('nothing but a transcript → honest amnesia', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    const first = await talk(config, ['one']);
    await first.close();
    const f = files(first.root, 'cli');
    fs.rmSync(f.history);
    fs.rmSync(f.conversation);
    const hive = await talk(config, ['two']);
    expect(replies(hive.root).at(-1)).toBe('heard "two" (history 0) [briefed]');
    expect(hive.status().find((s) => s.id === 'cli')?.conversation).toBe('amnesia');
    const restore = readJsonl<{ kind: string; mode?: string }>(files(hive.root, 'cli').transcript).filter((e) => e.kind === 'restore');
    expect(restore.at(-1)?.mode).toBe('amnesia');
  });

  it('a transcript with a torn last line loads without it', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    const first = await talk(config, ['one']);
    await first.close();
    const whole = readJsonl(files(first.root, 'cli').transcript).length;
    fs.appendFileSync(files(first.root, 'cli').transcript, '{"kind":"tor');
    expect(readJsonl(files(first.root, 'cli').transcript)).toHaveLength(whole); // the torn line is skipped, the rest kept
    const hive = await talk(config, ['two']);
    expect(replies(hive.root).at(-1)).toBe('heard "two" (history 2)');
    // The records after the torn line are whole: the restart's `restore` and the new turn.
    const kinds = readJsonl<{ kind: string }>(files(hive.root, 'cli').transcript).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'restore')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'input')).toHaveLength(2);
  });

  it('a SIGKILL in the middle of a turn loses at most that turn: it is re-run once, nothing doubles', async () => {
    const root = tempRoot();
    let child = startFixture('cli-hive-process.ts', [root]);
    await new Promise<void>((resolve) => collectLines(child, (l) => l === 'ready' && resolve()));
    writeOutbox(root, [createMessage({ from: 'client', to: 'cli', act: 'request', body: 'first' })]);
    const dir = path.join(root, 'agents', 'cli');
    const deadline = Date.now() + 20_000;
    while (replies(root).length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const second = createMessage({ from: 'client', to: 'cli', act: 'request', body: 'please wait' });
    writeOutbox(root, [second]);
    while (!fs.existsSync(path.join(dir, 'gate.started')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    fs.rmSync(path.join(dir, 'gate.started'));
    fs.writeFileSync(path.join(dir, 'gate.open'), '');
    child = startFixture('cli-hive-process.ts', [root]);
    await new Promise<void>((resolve) => collectLines(child, (l) => l === 'ready' && resolve()));
    while (replies(root).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGTERM');
    await new Promise((r) => child.once('close', r));
    expect(replies(root)).toEqual(['done first', 'done please wait']);
    const turns = readJsonl<{ role: string; text: string }>(sessionPaths(root, 'cli', currentSession(root, 'cli').key).conversation);
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const history = JSON.parse(fs.readFileSync(sessionPaths(root, 'cli', currentSession(root, 'cli').key).history, 'utf8'));
    expect(history.messages).toHaveLength(4);
  }, 60_000);
});

describe('sessions: caps, sweep, clear, archive, snapshots', () => {
  it('caps are enforced on write: transcript lines, conversation turns, history bytes', async () => {
    const config = fastConfig({
      agents: [{ id: 'cli', brain: answerCli }, client],
      sessions: { transcriptLines: 20, conversationTurns: 6, historyBytes: 1_500 },
    });
    const hive = await talk(config, Array.from({ length: 8 }, (_, i) => `message number ${i}`));
    // The session is written right after the turn's commit, and the reply may reach the
    // client first (the router reads it from the commit record): wait for the last turn's.
    const log = () => fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8');
    await waitFor(hive, () => log().includes('"type":"session.history-skipped"'), 'the history over its cap skipped', 10_000);
    const f = files(hive.root, 'cli');
    expect(readJsonl(f.transcript).length).toBeLessThanOrEqual(20);
    expect(readJsonl(f.conversation).length).toBeLessThanOrEqual(6);
    expect(fs.statSync(f.history).size).toBeLessThanOrEqual(1_500);
    // The skipped history is not passed off as full fidelity after a restart: the tail brief.
    await hive.close();
    const again = await startHive(config);
    expect(again.status().find((s) => s.id === 'cli')?.conversation).toBe('tail');
  });

  it('the startup sweep deletes orphan journals and keeps live and archived ones', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a' });
    const live = currentSession(root, 'a').key;
    fs.appendFileSync(sessionPaths(root, 'a', live).conversation, `${JSON.stringify({ role: 'user', text: 'hi', at: 'x' })}\n`);
    const archived = (await archiveSession(root, 'a', 'test'))!.key;
    const orphan = '11111111-2222-4333-8444-555555555555';
    fs.mkdirSync(sessionPaths(root, 'a', orphan).dir, { recursive: true });
    fs.writeFileSync(sessionPaths(root, 'a', orphan).transcript, '{}\n');
    expect(sweepOrphanSessions(root)).toEqual([`a/${orphan}`]);
    expect(fs.existsSync(sessionPaths(root, 'a', archived).dir)).toBe(true);
    expect(fs.existsSync(sessionPaths(root, 'a', currentSession(root, 'a').key).dir)).toBe(true);
  });

  it('clear deletes all of a session\'s files together and starts a new key', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    const hive = await talk(config, ['one']);
    const before = files(hive.root, 'cli');
    const oldKey = currentSession(hive.root, 'cli').key;
    await hive.supervisor.withAgentPaused('cli', () => clearSession(hive.root, 'cli'));
    expect(fs.existsSync(before.dir)).toBe(false);
    expect(currentSession(hive.root, 'cli').key).not.toBe(oldKey);
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'again' });
    await waitFor(hive, () => replies(hive.root).length === 2, 'reply after clear');
    expect(replies(hive.root).at(-1)).toBe('heard "again" (history 0)');
  });

  it('archive keeps the newest N; evicting one deletes its files; reopen brings one back', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a' });
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      keys.push(currentSession(root, 'a').key);
      fs.appendFileSync(sessionPaths(root, 'a', currentSession(root, 'a').key).conversation, `${JSON.stringify({ role: 'user', text: `talk ${i}`, at: 'x' })}\n`);
      await archiveSession(root, 'a', 'test', 2);
    }
    expect(readArchive(root).map((s) => s.key)).toEqual([keys[2], keys[1]]);
    expect(fs.existsSync(sessionPaths(root, 'a', keys[0]!).dir)).toBe(false);
    const { reopenSession } = await import('../src/session/archive.ts');
    // The live session has a turn, so reopening archives it: the archive is full (cap 2)
    // and the session being reopened must not be the one evicted to make room.
    fs.appendFileSync(sessionPaths(root, 'a', currentSession(root, 'a').key).conversation, `${JSON.stringify({ role: 'user', text: 'live', at: 'x' })}\n`);
    await reopenSession(root, keys[1]!);
    expect(currentSession(root, 'a').key).toBe(keys[1]);
    expect(fs.existsSync(sessionPaths(root, 'a', keys[1]!).dir)).toBe(true); // not evicted on the way
    expect(readArchive(root).map((s) => s.key)).not.toContain(keys[1]);
    expect(readArchive(root)).toHaveLength(2); // the cap given first is recorded and kept
  });

  it('an agent removed from the config is archived with its conversation; put back, it is active again', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client] });
    const first = await talk(config, ['remember the blue door']);
    const key = currentSession(first.root, 'cli').key;
    await first.close();
    const without = await startHive({ ...config, agents: [client] });
    expect(readRegistry(without.root).agents.cli?.status).toBe('archived');
    expect(readArchive(without.root).find((s) => s.key === key)).toMatchObject({ agent: 'cli', reason: 'agent removed from the config', turns: 2 });
    expect(fs.existsSync(sessionPaths(without.root, 'cli', key).dir)).toBe(true);
    expect(without.status().find((s) => s.id === 'cli')?.status).not.toBe('running');
    await without.close();
    const back = await startHive(config);
    expect(readRegistry(back.root).agents.cli?.status).toBe('active');
    await back.close();
  });

  it('the configured archive cap holds for session commands run with no hive running', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, client], sessions: { archiveEntries: 2 } });
    const hive = await talk(config, ['first']);
    await hive.close();
    for (let i = 0; i < 3; i++) {
      fs.appendFileSync(files(hive.root, 'cli').conversation, `${JSON.stringify({ role: 'user', text: `talk ${i}`, at: 'x' })}\n`);
      await runSessionAction(hive.root, 'cli', 'archive', {}); // what `hive archive` does offline
    }
    expect(readArchive(hive.root)).toHaveLength(2);
  });

  it('a snapshot imported into another agent briefs its next turn, once', async () => {
    const config = fastConfig({ agents: [{ id: 'cli', brain: answerCli }, { id: 'other', brain: answerCli }, client] });
    const hive = await talk(config, ['we decided to ship on friday', 'and to write the docs first']);
    const snap = await createSnapshot(hive.root, 'cli', 'decisions');
    expect(snap).toMatchObject({ method: 'extractive', turns: 4 });
    expect(snap.summary).toContain('ship on friday');
    expect(listSnapshots(hive.root).map((s) => s.name)).toEqual(['decisions']);
    importSnapshot(hive.root, 'decisions', 'other');
    for (const body of ['hello', 'hello again']) {
      const before = replies(hive.root).length;
      await hive.send({ from: 'client', to: 'other', act: 'request', body });
      await waitFor(hive, () => replies(hive.root).length === before + 1, body);
    }
    expect(replies(hive.root).slice(-2)).toEqual(['heard "hello" (history 0) [briefed]', 'heard "hello again" (history 2)']);
  }, 90_000);

  it('a provider switch archives the old conversation and offers keep-memory or snapshot', async () => {
    const root = tempRoot();
    const first = await talk(fastConfig({ root, agents: [{ id: 'cli', brain: answerCli }, client] }), ['remember this']);
    await first.close();
    // Another program (env running the same script): a different provider identity.
    const switched = { kind: 'command' as const, command: '/usr/bin/env', args: [process.execPath, ...answerCli.args] };
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'cli', brain: switched }, client] }));
    await waitFor(hive, () => listInbox(root, 'god').some((e) => e.message?.subject === 'cli switched provider'), 'offer to god');
    expect(readArchive(root)[0]).toMatchObject({ agent: 'cli', reason: 'provider switch', turns: 2 });
    const { runSessionAction } = await import('../src/session/actions.ts');
    await runSessionAction(root, 'cli', 'switch-keep', {}, hive.supervisor);
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'still there?' });
    await waitFor(hive, () => replies(root).length === 2, 'reply after keep');
    expect(replies(root).at(-1)).toBe('heard "still there?" (history 2)');
  }, 90_000);

  it('keep-memory after a history that outgrew its cap briefs from the turns instead of restoring an empty history', async () => {
    const root = tempRoot();
    const config = fastConfig({ root, agents: [{ id: 'cli', brain: answerCli }, client], sessions: { historyBytes: 200 } });
    await (await talk(config, ['remember the blue door', 'and the red key'])).close();
    const switched = { kind: 'command' as const, command: '/usr/bin/env', args: [process.execPath, ...answerCli.args] };
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'cli', brain: switched }, client], sessions: { historyBytes: 200 } }));
    await waitFor(hive, () => listInbox(root, 'god').some((e) => e.message?.subject === 'cli switched provider'), 'offer to god');
    const { runSessionAction } = await import('../src/session/actions.ts');
    await runSessionAction(root, 'cli', 'switch-keep', {}, hive.supervisor);
    expect(hive.status().find((s) => s.id === 'cli')?.conversation).toBe('tail');
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'still there?' });
    await waitFor(hive, () => replies(root).length === 3, 'reply after keep');
    expect(replies(root).at(-1)).toBe('heard "still there?" (history 0) [briefed]');
  }, 90_000);
});
