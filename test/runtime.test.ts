import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { createHive } from '../src/hive.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { readRegistry } from '../src/registry/registry.ts';
import { DEFAULT_WORKER_HEAP_MB, withoutRefusedFlags, workerHeapLimitMb, workerResourceLimits } from '../src/supervisor/worker-handle.ts';
import { TurnWatchdog, watchdogInterval } from '../src/supervisor/turn-watchdog.ts';
import { TurnClock } from '../src/agent/turn-clock.ts';

const crashy = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'crashy.ts') };
const client = { id: 'client', brain: { kind: 'external' as const } };

function inbox(root: string, id: string) {
  return readInbox(root, id, 0).entries.map((e) => e.message);
}

describe('agent runtime', () => {
  it('echo answers a request end to end through router and worker', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    const req = await hive.send({ from: 'client', to: 'echo', act: 'request', subject: 'Hi', body: 'ping' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'reply in client inbox');
    const [reply] = inbox(hive.root, 'client');
    expect(reply).toMatchObject({ from: 'echo', to: 'client', act: 'inform', in_reply_to: req.id, body: 'ping', subject: 'Re: Hi', hops: 1, conversation: req.conversation });
  });

  it('a turn that waits on nothing reports its state once, not once per transition; status still follows the cursor', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    await new Promise((r) => setTimeout(r, 100)); // let the start-up report settle
    const values: string[] = [];
    const off = hive.on('state', (e) => {
      if (e.actor === 'echo') values.push(e.value);
    });
    const processed = nextEvent(hive, 'processed', (e) => e.agent === 'echo');
    await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'ping' });
    await processed;
    await waitFor(hive, () => hive.status().find((s) => s.id === 'echo')?.cursor === 1, 'status shows cursor 1');
    off();
    // fetching → thinking → committing → idle was four events, one postMessage each.
    expect(values.length).toBeGreaterThanOrEqual(1);
    expect(values.length).toBeLessThanOrEqual(2);
    expect(values.at(-1)).toBe('idle');
  });

  it('routes a message file written by hand into an outbox', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    fs.writeFileSync(
      path.join(agentPaths(hive.root, 'client').outbox, 'by-hand.json'),
      JSON.stringify({ id: 'by-hand-1', from: 'client', to: 'echo', act: 'query', body: 'written by hand' }),
    );
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.in_reply_to === 'by-hand-1'), 'reply to the hand-written file');
  });

  it('a brain that throws crashes its worker; a new thread restores the actor and nothing is lost or handled twice', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'w', brain: crashy }, client] }));
    const before = hive.supervisor.threadOf('w');
    const restarted = nextEvent(hive, 'restarted', (e) => e.agents.includes('w'));
    const sent = [];
    sent.push(await hive.send({ from: 'client', to: 'w', act: 'request', body: 'one' }));
    sent.push(await hive.send({ from: 'client', to: 'w', act: 'request', body: 'throw-once' }));
    sent.push(await hive.send({ from: 'client', to: 'w', act: 'request', body: 'three' }));
    await restarted;
    await waitFor(hive, () => inbox(hive.root, 'client').length === 3, 'three replies');
    expect(hive.supervisor.threadOf('w')).not.toBe(before);
    const replies = inbox(hive.root, 'client');
    expect(replies.map((r) => r.in_reply_to).sort()).toEqual(sent.map((s) => s.id).sort());
    const state = readStateFile(hive.root, 'w')!;
    expect(state.snapshot.context.brainState).toMatchObject({ handled: sent.map((s) => s.id) });
    expect(state.cursor).toBe(3);
  });

  it('pooled hosts: agents sharing a worker are all restored when one of them crashes it; nothing lost or handled twice', async () => {
    const hive = await startHive(
      fastConfig({
        agents: [{ id: 'w', brain: crashy }, { id: 'e1', brain: { kind: 'echo' } }, { id: 'e2', brain: { kind: 'echo' } }, client],
        supervisor: { agentsPerWorker: 3 },
      }),
    );
    const thread = hive.supervisor.threadOf('w');
    expect(hive.supervisor.threadOf('e1')).toBe(thread); // one worker carries all three
    expect(hive.supervisor.threadOf('e2')).toBe(thread);
    const restarted = nextEvent(hive, 'restarted', (e) => e.agents.includes('w'));
    const sent = [];
    for (const to of ['e1', 'w', 'e2']) sent.push(await hive.send({ from: 'client', to, act: 'request', body: 'one' }));
    sent.push(await hive.send({ from: 'client', to: 'w', act: 'request', body: 'throw-once' }));
    for (const to of ['e1', 'e2', 'w']) sent.push(await hive.send({ from: 'client', to, act: 'request', body: 'after' }));
    const e = await restarted;
    expect([...e.agents].sort()).toEqual(['e1', 'e2', 'w']);
    await waitFor(hive, () => inbox(hive.root, 'client').length === sent.length, 'every reply');
    expect(hive.supervisor.threadOf('e1')).not.toBe(thread);
    expect(inbox(hive.root, 'client').map((r) => r.in_reply_to).sort()).toEqual(sent.map((m) => m.id).sort());
    for (const id of ['e1', 'e2']) expect(readStateFile(hive.root, id)!.cursor).toBe(2);
    expect(readStateFile(hive.root, 'w')!.snapshot.context.brainState).toMatchObject({ handled: sent.filter((m) => m.to === 'w').map((m) => m.id) });
  });

  it('a worker that exits is restarted; a message that crashes it three times goes to dead-letter as poison', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'w', brain: crashy }, client], supervisor: { poisonAfter: 3, restart: { maxRestarts: 10 } } }));
    const bad = await hive.send({ from: 'client', to: 'w', act: 'request', body: 'exit' });
    const good = await hive.send({ from: 'client', to: 'w', act: 'request', body: 'fine' });
    const dead = nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_POISON');
    await dead;
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.in_reply_to === good.id), 'the next message is handled');
    const poison = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_POISON');
    expect(poison?.name).toContain(bad.id);
    expect(poison?.reason?.error).toContain('3 times in a row');
    await waitFor(hive, () => inbox(hive.root, 'god').some((m) => m.subject.startsWith('Poison message')), 'god is told');
    // A restart is counted once its new worker is up; the notice to god can land first.
    await waitFor(hive, () => hive.status().find((s) => s.id === 'w')?.restarts === 3, 'three restarts counted');
    // And no more: a later message is handled by the same worker (the poison is not re-run).
    const later = await hive.send({ from: 'client', to: 'w', act: 'request', body: 'later' });
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.in_reply_to === later.id), 'a later message is handled');
    expect(hive.status().find((s) => s.id === 'w')?.restarts).toBe(3);
  });

  it('more than maxRestarts crashes within the window marks the actor failed, tells god, and the hive keeps running', async () => {
    const hive = await startHive(
      fastConfig({
        agents: [{ id: 'w', brain: crashy }, { id: 'echo', brain: { kind: 'echo' } }, client],
        supervisor: { poisonAfter: 50, restart: { maxRestarts: 2, withinMs: 60_000 } },
      }),
    );
    const failed = nextEvent(hive, 'failed', (e) => e.agents.includes('w'));
    await hive.send({ from: 'client', to: 'w', act: 'request', body: 'exit' });
    const f = await failed;
    expect(f.restarts).toBe(2);
    await waitFor(hive, () => inbox(hive.root, 'god').some((m) => m.subject === 'agent(s) w failed'), 'god notice');
    expect(readRegistry(hive.root).agents.w!.status).toBe('failed');
    expect(hive.status().find((s) => s.id === 'w')?.status).toBe('failed');
    await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'still alive?' });
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.from === 'echo'), 'other agents still answer');
  });

  it('a pooled host of 60 agents given up on: god is told, naming five of them in the subject and all in the body, and the hive keeps running', async () => {
    const mates = Array.from({ length: 59 }, (_, i) => ({ id: `a-pool-mate-with-a-long-name-${i}`, brain: { kind: 'echo' as const }, host: 'pool' }));
    const hive = await startHive(
      fastConfig({
        agents: [{ id: 'w', brain: crashy, host: 'pool' }, ...mates, { id: 'echo', brain: { kind: 'echo' } }, client],
        supervisor: { poisonAfter: 50, restart: { maxRestarts: 2, withinMs: 60_000 } },
      }),
    );
    const failed = nextEvent(hive, 'failed', (e) => e.agents.includes('w'));
    await hive.send({ from: 'client', to: 'w', act: 'request', body: 'exit' });
    expect((await failed).agents).toHaveLength(60);
    await waitFor(hive, () => inbox(hive.root, 'god').some((m) => m.subject?.endsWith('and 55 more failed')), 'god notice');
    const notice = inbox(hive.root, 'god').find((m) => m.subject?.endsWith('and 55 more failed'))!;
    expect(notice.subject!.length).toBeLessThanOrEqual(500);
    for (const m of mates) expect(notice.body).toContain(m.id);
    await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'still alive?' });
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.from === 'echo'), 'other agents still answer');
  });

  it('the hop cap stops a reply loop: dead-letter plus a notice to god', async () => {
    const pingPong = { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'ping-pong.ts') };
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: pingPong }, { id: 'b', brain: pingPong }], router: { hopCap: 5 } }));
    await hive.send({ from: 'a', to: 'b', act: 'request', body: 'start' });
    const dead = await nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_HOP_CAP');
    expect(dead.error).toContain('6 hops > cap 5');
    await waitFor(hive, () => inbox(hive.root, 'god').some((m) => m.body.includes('Hop cap')), 'god notice');
    const handled = (readStateFile(hive.root, 'a')?.cursor ?? 0) + (readStateFile(hive.root, 'b')?.cursor ?? 0);
    expect(handled).toBe(6);
  });

  it('broadcast, unknown recipients and needs_human in a running hive', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'e1', brain: { kind: 'echo' } }, { id: 'e2', brain: { kind: 'echo' } }, client] }));
    await hive.send({ from: 'client', to: 'broadcast', act: 'query', body: 'all' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 2, 'both echo agents answer the broadcast');
    expect(inbox(hive.root, 'client').map((m) => m.from).sort()).toEqual(['e1', 'e2']);
    // Subscribed first: hive.send resolves once the router routed it, here to dead-letter.
    const deadLettered = nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_UNKNOWN_AGENT');
    await hive.send({ from: 'client', to: 'nobody', act: 'inform', body: 'lost?' });
    await deadLettered;
    const ask = await hive.send({ from: 'client', to: 'e1', act: 'query', body: 'approve?', needs_human: true });
    await waitFor(hive, () => inbox(hive.root, 'god').some((m) => m.id === ask.id), 'the question reaches god');
    expect(inbox(hive.root, 'e1').some((m) => m.id === ask.id)).toBe(false);
  });

  it('hive.send from a sender that is no agent, or whose folder was removed, is refused with E_UNKNOWN_AGENT and writes nothing', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'e1', brain: { kind: 'echo' } }, client, { id: 'gone', brain: { kind: 'external' } }] }));
    await expect(hive.send({ from: 'stranger', to: 'e1', act: 'inform', body: 'who?' })).rejects.toMatchObject({ code: 'E_UNKNOWN_AGENT' });
    expect(fs.existsSync(path.join(hive.root, 'agents', 'stranger'))).toBe(false);
    await hive.send({ from: 'gone', to: 'e1', act: 'inform', body: 'before' });
    fs.rmSync(path.join(hive.root, 'agents', 'gone'), { recursive: true, force: true });
    await expect(hive.send({ from: 'gone', to: 'e1', act: 'inform', body: 'after' })).rejects.toMatchObject({ code: 'E_UNKNOWN_AGENT' });
    expect(fs.existsSync(path.join(hive.root, 'agents', 'gone'))).toBe(false);
    await hive.send({ from: 'client', to: 'e1', act: 'request', body: 'still flowing' });
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.body.includes('still flowing')), 'traffic still flows');
  });

  it('a durable timer armed before a restart fires after it', async () => {
    const config = fastConfig({ agents: [{ id: 'w', brain: crashy }, client] });
    const first = await startHive(config);
    await first.send({ from: 'client', to: 'w', act: 'inform', body: 'arm 1500' });
    await waitFor(first, () => (readStateFile(first.root, 'w')?.snapshot.context.timers.length ?? 0) === 1, 'timer armed and committed');
    const armedAt = Date.now();
    await first.close();
    expect(inbox(first.root, 'client')).toEqual([]);
    const second = await startHive(config);
    await waitFor(second, () => inbox(second.root, 'client').some((m) => m.body.startsWith('timer fired')), 'timer fired after restart', 10_000);
    expect(Date.now() - armedAt).toBeGreaterThanOrEqual(1_000);
    expect(readStateFile(second.root, 'w')!.snapshot.context.timers).toEqual([]);
  });

  it('spawn at runtime is recorded in registry.json and back after a restart; stop keeps it stopped', async () => {
    const config = fastConfig({ agents: [client] });
    const hive = await startHive(config);
    await hive.spawn({ id: 'late', brain: { kind: 'echo' } });
    expect(readRegistry(hive.root).agents.late).toMatchObject({ origin: 'runtime', status: 'active' });
    await hive.send({ from: 'client', to: 'late', act: 'request', body: 'hello' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'spawned agent answers');
    await hive.close();
    const again = await startHive(config);
    expect(again.status().find((s) => s.id === 'late')).toMatchObject({ kind: 'agent', status: 'running' });
    await again.stop('late');
    expect(again.status().find((s) => s.id === 'late')).toMatchObject({ status: 'stopped' });
    await again.send({ from: 'client', to: 'late', act: 'request', body: 'while stopped' });
    await again.close();
    const third = await startHive(config);
    expect(third.status().find((s) => s.id === 'late')?.status).toBe('stopped');
    expect(third.status().find((s) => s.id === 'late')?.inboxDepth).toBe(1);
  });

  it('status lists each actor with kind, state, restarts, inbox depth and cursor', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'x' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'reply');
    // The cursor arrives with the `fetching` state after the commit; `idle` follows in a later event.
    await waitFor(hive, () => hive.status().find((s) => s.id === 'echo')?.cursor === 1 && hive.status().find((s) => s.id === 'echo')?.state === 'idle', 'cursor reported, idle again');
    const rows = hive.status();
    expect(rows.find((s) => s.id === 'router')).toMatchObject({ kind: 'router', status: 'running' });
    expect(rows.find((s) => s.id === 'echo')).toMatchObject({ kind: 'agent', status: 'running', state: 'idle', restarts: 0, inboxDepth: 0, cursor: 1, handled: 1 });
    expect(rows.find((s) => s.id === 'client')).toMatchObject({ kind: 'passive', inboxDepth: 1 });
  });

  it('a second supervisor on the same root is refused with E_LOCKED', async () => {
    const config = fastConfig({ agents: [client] });
    await startHive(config);
    await expect(createHive(config).start()).rejects.toMatchObject({ code: 'E_LOCKED' });
  });
});

describe('worker flags', () => {
  it('drops process-wide flags a worker refuses (node --perf-basic-prof ...) and keeps the rest', () => {
    // Node throws ERR_WORKER_INVALID_EXEC_ARGV for these: passed on, no worker would ever start.
    expect(withoutRefusedFlags(['--perf-basic-prof', '--enable-source-maps', '--max-old-space-size=100', '--title=x'])).toEqual(['--enable-source-maps']);
    expect(withoutRefusedFlags(['--enable-source-maps'])).toEqual(['--enable-source-maps']);
    expect(withoutRefusedFlags([])).toEqual([]);
  });

  it('the parent\'s --max-old-space-size becomes each worker\'s own heap limit', () => {
    expect(workerResourceLimits(['--max-old-space-size=300'])).toEqual({ maxOldGenerationSizeMb: 300 });
    expect(workerResourceLimits(['--enable-source-maps', '--max_old_space_size', '512'])).toEqual({ maxOldGenerationSizeMb: 512 });
    expect(workerResourceLimits(['--enable-source-maps'])).toEqual({});
    expect(workerResourceLimits(['--max-old-space-size=lots'])).toEqual({});
  });

  it('an agent host\'s heap limit: the config, else the parent\'s flag, else 512 MB, per agent it carries', () => {
    expect(workerHeapLimitMb(96, 1, ['--max-old-space-size=300'])).toBe(96);
    expect(workerHeapLimitMb(undefined, 1, ['--max-old-space-size=300'])).toBe(300);
    expect(workerHeapLimitMb(undefined, 1, [])).toBe(DEFAULT_WORKER_HEAP_MB);
    expect(workerHeapLimitMb(undefined, 100, [])).toBe(100 * DEFAULT_WORKER_HEAP_MB);
    expect(DEFAULT_WORKER_HEAP_MB).toBe(512);
  });

  it('the turn watchdog kills a turn past its deadline once, with a reason naming agent and limit; others and idle agents are left alone', () => {
    let now = 10_000;
    const clocks = { slow: new TurnClock(), quick: new TurnClock(), idle: new TurnClock() };
    const kills: string[] = [];
    const watchdog = new TurnWatchdog(
      () => Object.entries(clocks).map(([agent, clock]) => ({ agent, clock, limitMs: agent === 'slow' ? 1_000 : 5_000, kill: (reason: string) => kills.push(reason) })),
      () => now,
    );
    clocks.slow.start(9_000);
    clocks.quick.start(9_500);
    expect(watchdog.check()).toEqual([]); // slow is exactly at its limit
    now = 10_001;
    expect(watchdog.check()).toEqual(['slow']);
    expect(kills[0]).toMatch(/agent "slow" was in one turn for 1001 ms, over its limit of 1000 ms/);
    expect(watchdog.check()).toEqual([]); // one kill per turn
    expect(clocks.quick.startedAt()).toBe(9_500);
    expect(clocks.idle.startedAt()).toBeNull();
    expect(watchdogInterval([600_000, 1_500])).toBe(375);
    expect(watchdogInterval([100])).toBe(50);
    expect(watchdogInterval([600_000])).toBe(1_000);
  });
});

describe('wake-ups, not polls', () => {
  it('with the router and inbox polls at 60 s, an API send and a hand-written outbox file are each answered within 1 s', async () => {
    const hive = await startHive(
      fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client], router: { pollMs: 60_000 }, supervisor: { inboxPollMs: 60_000 } }),
    );
    await new Promise((r) => setTimeout(r, 200)); // past the start-up passes: from here on only wake-ups move anything
    const sent = await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'woken, not polled' });
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.in_reply_to === sent.id), 'reply to the API send', 1_000);
    fs.writeFileSync(path.join(agentPaths(hive.root, 'client').outbox, 'by-hand.json'), JSON.stringify({ id: 'by-hand-nopoll', from: 'client', to: 'echo', act: 'request', body: 'by hand' }));
    await waitFor(hive, () => inbox(hive.root, 'client').some((m) => m.in_reply_to === 'by-hand-nopoll'), 'reply to the hand-written file', 1_000);
  });
});
