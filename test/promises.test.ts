import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { tempRoot } from './helpers/temp.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { hiveState, logged, replies, start, until } from './helpers/crash-hive.ts';
import { createHive } from '../src/hive.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { hivePaths } from '../src/layout/paths.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { listInbox, readInbox } from '../src/queue/inbox.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { deliverThroughRouter as deliver } from './helpers/deliver.ts';
import { committedCursor } from '../src/queue/committed-cursor.ts';
import { requestJsonLine } from '../src/net/json-line.ts';
import { resolveSocketPath } from '../src/net/socket-path.ts';
import { HOOKS_SOCKET } from '../src/hooks/server.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { currentSession } from '../src/session/session.ts';
import { listSnapshots } from '../src/session/snapshots.ts';

/** Promises the README makes that had no test of their own. */

const client = { id: 'client', brain: { kind: 'external' as const } };

describe('kickoff messages are sent once, ever', () => {
  it('across restarts, and when kickoff.json was lost after the send (the same ids are dropped as copies)', async () => {
    const root = tempRoot();
    const config = fastConfig({ root, agents: [{ id: 'echo', brain: { kind: 'echo' } }, client], kickoff: [{ from: 'client', to: 'echo', act: 'request', body: 'go' }] });
    const kickoffs = () => listInbox(root, 'echo').filter((e) => e.message?.body === 'go').length;
    for (const lose of [false, false, true]) {
      if (lose) fs.rmSync(path.join(root, 'kickoff.json')); // as if the write after the send never happened
      const hive = createHive(config);
      await hive.start();
      await waitFor(hive, () => kickoffs() >= 1 && replies(root).length >= 1, 'the kickoff delivered and answered');
      await hive.close();
    }
    expect(kickoffs()).toBe(1);
    expect(replies(root)).toHaveLength(1);
  }, 60_000);
});

describe('a message in flight through many supervisor deaths is poisoned, not re-run for ever', () => {
  it(`poisonAfter 3: in flight through 7 SIGKILLs of the supervisor (more than 2 × poisonAfter), it is dead-lettered at the next start`, async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    const pids = path.join(root, 'pids');
    // Whole lines only: the provider's append creates the file before it writes, and an
    // empty file read as one run let the test kill run 1 before its line (the old flake).
    const runs = () => (fs.existsSync(pids) ? (fs.readFileSync(pids, 'utf8').match(/\n/g) ?? []).length : 0);
    const request = createMessage({ from: 'client', to: 'counter', act: 'request', body: 'never answered' });
    writeOutbox(root, [request]);
    for (let kill = 1; kill <= 7; kill++) {
      const run = await start(root, '-', 'sleepy');
      await until(() => runs() >= kill, `run ${kill} of the turn`, 30_000, () => hiveState(root));
      expect(listDeadLetters(root).some((d) => d.reason?.code === 'E_POISON')).toBe(false); // still re-run
      run.child.kill('SIGKILL');
      await run.exited;
    }
    const last = await start(root, '-', 'sleepy');
    await until(() => listDeadLetters(root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(request.id)), 'the poison dead letter');
    expect(runs()).toBe(7); // not asked an eighth time
    expect(logged(root, 'message.dead-lettered', last.pid).some((l) => l.code === 'E_POISON')).toBe(true);
    last.child.kill('SIGTERM');
    await last.exited;
  }, 120_000);
});

describe('durable timers survive a SIGKILL', () => {
  it('a timer armed and committed before the supervisor is SIGKILLed fires after the restart', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    const first = await start(root, '-', 'crashy');
    const arm = createMessage({ from: 'client', to: 'counter', act: 'request', body: 'arm 1500' });
    writeOutbox(root, [arm]);
    await until(() => replies(root).some((m) => m.in_reply_to === arm.id), 'the timer armed (its turn committed)');
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await start(root, '-', 'crashy');
    await until(() => replies(root).some((m) => m.body.startsWith('timer fired')), 'the timer to fire after the restart', 20_000);
    second.child.kill('SIGTERM');
    await second.exited;
    expect(replies(root).filter((m) => m.body.startsWith('timer fired'))).toHaveLength(1);
  }, 60_000);
});

describe('hook acks, the three ways they come back', () => {
  async function passive() {
    const hive = await startHive(fastConfig({ agents: [{ id: 'ext', brain: { kind: 'external' } }, { id: 'echo', brain: { kind: 'echo' } }] }));
    const sock = resolveSocketPath(hive.root, HOOKS_SOCKET);
    const ask = (event: Record<string, unknown>) => requestJsonLine(sock, { agent_id: 'ext', agent_token: hive.agentToken('ext'), ...event }, 5_000) as Promise<Record<string, unknown>>;
    await deliver(hive.root, 'ext', [1, 2].map((i) => createMessage({ from: 'echo', to: 'ext', act: 'inform', body: `news ${i}` })));
    return { hive, ask };
  }

  it('an ack carried on a later event of any kind moves the cursor', async () => {
    const { hive, ask } = await passive();
    const stop = await ask({ hook_event_name: 'Stop' });
    expect(committedCursor(hive.root, 'ext')).toBe(0);
    expect(await ask({ hook_event_name: 'Notification', ack: stop.ack })).toEqual({ ok: true });
    expect(committedCursor(hive.root, 'ext')).toBe(2);
  });

  it('the next Stop with stop_hook_active acknowledges what the last one handed out, even after a supervisor restart', async () => {
    const { hive, ask } = await passive();
    const stop = await ask({ hook_event_name: 'Stop' });
    expect(stop.messages).toHaveLength(2);
    await hive.close();
    const again = await startHive({ ...fastConfig({ root: hive.root, agents: [{ id: 'ext', brain: { kind: 'external' } }, { id: 'echo', brain: { kind: 'echo' } }] }) });
    const sock = resolveSocketPath(again.root, HOOKS_SOCKET);
    const next = (await requestJsonLine(sock, { hook_event_name: 'Stop', agent_id: 'ext', agent_token: again.agentToken('ext'), stop_hook_active: true }, 5_000)) as Record<string, unknown>;
    expect(committedCursor(again.root, 'ext')).toBe(2);
    expect(next).toEqual({ ok: true }); // the two were acknowledged, not handed out again
  });
});

describe('session commands reach a running hive through its control socket', () => {
  const answerCli = { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'answer.mjs')] };

  async function cli(args: string[]) {
    const io = memoryIO();
    const code = await runCli(args, io.io);
    return { code, stdout: io.stdout, stderr: io.stderr };
  }

  it('hive clear, then hive snapshot and hive switch --snapshot after a provider switch, each on the running agent', async () => {
    const root = tempRoot();
    const first = await startHive(fastConfig({ root, agents: [{ id: 'cli', brain: answerCli }, client] }));
    await first.send({ from: 'client', to: 'cli', act: 'request', body: 'one' });
    await waitFor(first, () => readInbox(root, 'client', 0).entries.length === 1, 'first reply');
    const key = currentSession(root, 'cli').key;
    const cleared = await cli(['clear', 'cli', '--root', root]);
    expect(cleared.code, cleared.stderr).toBe(0);
    const newKey = currentSession(root, 'cli').key;
    expect(newKey).not.toBe(key);
    // The running actor was paused and started on the new session (a local clear would leave it on the old one).
    expect(fs.readFileSync(hivePaths(root).log, 'utf8')).toContain(`"type":"session.restored","agent":"cli","session":"${newKey}"`);
    await first.send({ from: 'client', to: 'cli', act: 'request', body: 'two' });
    await waitFor(first, () => readInbox(root, 'client', 0).entries.length === 2, 'reply after clear');
    expect(readInbox(root, 'client', 0).entries.at(-1)!.message.body).toBe('heard "two" (history 0)');
    expect((await cli(['snapshot', 'cli', '--name', 'recap', '--root', root])).code).toBe(0);
    expect(listSnapshots(root).map((s) => s.name)).toContain('recap');
    await first.close();

    const switched = { kind: 'command' as const, command: '/usr/bin/env', args: [process.execPath, ...answerCli.args] };
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'cli', brain: switched }, client] }));
    await waitFor(hive, () => listInbox(root, 'god').some((e) => e.message?.subject === 'cli switched provider'), 'offer to god');
    const r = await cli(['switch', 'cli', '--snapshot', 'recap', '--root', root]);
    expect(r.code, r.stderr).toBe(0);
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'three' });
    await waitFor(hive, () => readInbox(root, 'client', 0).entries.length === 3, 'reply after the switch');
    expect(readInbox(root, 'client', 0).entries.at(-1)!.message.body).toBe('heard "three" (history 0) [briefed]');
  }, 90_000);
});
