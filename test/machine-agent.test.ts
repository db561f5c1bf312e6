import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES, runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { createHive } from '../src/hive.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { readRegistry } from '../src/registry/registry.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { readLog } from '../src/log/read.ts';

const counter = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'counter.ts') };
const client = { id: 'client', brain: { kind: 'external' as const } };

function inbox(root: string, id: string) {
  return readInbox(root, id, 0).entries.map((e) => e.message);
}

function machineState(root: string, id: string) {
  return readStateFile(root, id)!.snapshot.context.brainState as {
    snapshot: { value: string; context: { count: number }; children: Record<string, { snapshot: { context: { pings: number } } }> };
  };
}

describe('machine agents', () => {
  it('a request becomes an event; hiveReply answers it; the snapshot is the brain state', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client] }));
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'one' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'two' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 2, 'two replies');
    expect(inbox(hive.root, 'client').map((m) => m.body)).toEqual(['count 1', 'count 2']);
    expect(machineState(hive.root, 'm').snapshot).toMatchObject({ value: 'counting', context: { count: 2 } });
  });

  it("an LLM agent as a machine: hiveThink asks the agent's provider, hiveMemory searches memory, inside one turn", async () => {
    const thinker = {
      kind: 'machine' as const,
      module: path.join(FIXTURES, 'machines', 'thinker.ts'),
      provider: { kind: 'command' as const, command: path.join(FIXTURES, 'cli', 'shout.mjs') },
    };
    const hive = await startHive(fastConfig({ agents: [{ id: 't', brain: thinker }, client] }));
    await hive.remember('t', 'The wombat migration is on Tuesday.');
    const req = await hive.send({ from: 'client', to: 't', act: 'request', body: 'wombat' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the answer');
    expect(inbox(hive.root, 'client')[0]).toMatchObject({ body: 'THINK ABOUT WOMBAT | memories: 1', in_reply_to: req.id, conversation: req.conversation });
    // One commit for the turn: it ended idle, the invocations' results in its context.
    expect(machineState(hive.root, 't').snapshot).toMatchObject({ value: 'idle', context: { thought: 'THINK ABOUT WOMBAT', found: 1 } });
  });

  it("hive status shows the machine's state, running and not; hive diagram --agent draws the agent's own machine", async () => {
    const root = path.join(tempDir(), 'hive');
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'm', brain: counter }, client] }));
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'arm' });
    await waitFor(hive, () => inbox(root, 'client').length === 1, 'armed');
    await waitFor(hive, () => hive.status().find((a) => a.id === 'm')?.machine === 'armed', 'status shows armed');
    const running = await runHive(['status', '--root', root]);
    expect(running.stdout).toMatch(/MACHINE/);
    expect(running.stdout).toMatch(/^m +agent +machine +idle .* armed$/m);
    await hive.close();
    const offline = JSON.parse((await runHive(['status', '--root', root, '--json'])).stdout) as { running: boolean; actors: { id: string; machine: string | null }[] };
    expect(offline.running).toBe(false);
    expect(offline.actors.find((a) => a.id === 'm')?.machine).toBe('armed');
    const out = path.join(tempDir(), 'm.svg');
    const drawn = await runHive(['diagram', '--agent', 'm', '--root', root, '--out', out]);
    expect(drawn.code, drawn.stderr).toBe(0);
    const svg = fs.readFileSync(out, 'utf8');
    for (const state of ['counting', 'armed', 'sleeping']) expect(svg).toContain(`data-state="${state}"`);
    expect(svg).toContain('after 60000');
    const none = await runHive(['diagram', '--agent', 'client', '--root', root, '--out', out]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('agent client has no machine of its own');
  });

  it("an after on the machine's first state, armed before any message, fires once; a restart does not fire it again", async () => {
    const root = path.join(tempDir(), 'hive');
    const sentinel = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'sentinel.ts') };
    let hive = await startHive(fastConfig({ root, agents: [{ id: 's', brain: sentinel }, client] }));
    await waitFor(hive, () => inbox(root, 'client').length === 1, 'the first state\'s after', 15_000);
    expect(inbox(root, 'client')[0]!.body).toBe('awake');
    await waitFor(hive, () => (readStateFile(root, 's')?.snapshot.context.brainState as { snapshot?: { value?: unknown } } | undefined)?.snapshot?.value === 'awake', 'the commit');
    await hive.close();
    hive = await startHive(fastConfig({ root, agents: [{ id: 's', brain: sentinel }, client] }));
    await new Promise((r) => setTimeout(r, 2_000));
    expect(inbox(root, 'client')).toHaveLength(1);
    expect(readStateFile(root, 's')!.snapshot.context.timers).toEqual([]);
  });

  it("a provider that fails inside hiveThink is retried in place like any brain's, not poison: the turn commits once it answers", async () => {
    const thinker = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'thinker.ts'), provider: { kind: 'command' as const, command: process.execPath, args: [path.join(FIXTURES, 'cli', 'flaky.mjs')] } };
    const hive = await startHive(fastConfig({ agents: [{ id: 't', brain: thinker }, client], supervisor: { poisonAfter: 1 } }));
    await hive.send({ from: 'client', to: 't', act: 'request', body: 'wombat' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the answer after the retry');
    expect(inbox(hive.root, 'client')[0]!.body).toBe('recovered | memories: 0');
    expect(listDeadLetters(hive.root)).toEqual([]);
    expect(readLog(hive.root).filter((e) => e.type === 'brain.failed' && e.agent === 't')).toMatchObject([{ code: 'E_BRAIN', attempt: 1 }]);
  });

  it('a worker crash restores state value, context and a spawned child in a new thread', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client] }));
    for (const body of ['spawn', 'ping-kid', 'ping-kid', 'arm']) await hive.send({ from: 'client', to: 'm', act: 'request', body });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 4, 'four replies');
    const before = hive.supervisor.threadOf('m');
    const restarted = nextEvent(hive, 'restarted', (e) => e.agents.includes('m'));
    await hive.supervisor.workerOf('m')!.terminate();
    await restarted;
    expect(hive.supervisor.threadOf('m')).not.toBe(before);
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'ping-kid' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 5, 'the reply after the crash');
    // The machine resumed in armed, and its child answers a ping: it counts 3 now.
    expect(inbox(hive.root, 'client').at(-1)!.body).toBe('pinged (armed)');
    const s = machineState(hive.root, 'm').snapshot;
    expect(s.value).toBe('armed');
    expect(s.context.count).toBe(5);
    expect(s.children.kid!.snapshot.context.pings).toBe(3);
  });

  it('an event the machine does not handle is logged with its state, not lost: the cursor moves on', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client] }));
    const ignored = await hive.send({ from: 'client', to: 'm', act: 'inform', body: 'fyi' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'next' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the next request answered');
    const logged = readLog(hive.root).filter((e) => e.type === 'machine.ignored');
    expect(logged).toMatchObject([{ agent: 'm', event: 'hive.inform', id: ignored.id, state: 'counting' }]);
    expect(readStateFile(hive.root, 'm')!.cursor).toBe(2);
  });

  it('a machine that throws in an action crashes its worker, is restarted, and the message goes to dead-letter as poison after 3, naming the state', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client], supervisor: { poisonAfter: 3, restart: { maxRestarts: 10 } } }));
    const bad = await hive.send({ from: 'client', to: 'm', act: 'request', body: 'boom' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'after' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the next request answered', 60_000);
    const poison = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_POISON');
    expect(poison?.name).toContain(bad.id);
    expect(poison?.reason?.error).toMatch(/Agent "m" \(machine counter\.ts\): the machine threw on event hive\.request in state counting: boom in an action/);
    expect(inbox(hive.root, 'client')[0]!.body).toBe('count 1');
  });

  it('a child spawned from inline logic cannot be persisted: the turn fails with an error naming the child and what to do', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client], supervisor: { poisonAfter: 2, restart: { maxRestarts: 10 } } }));
    const bad = await hive.send({ from: 'client', to: 'm', act: 'request', body: 'spawn-inline' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'after' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the next request answered', 60_000);
    const poison = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_POISON');
    expect(poison?.name).toContain(bad.id);
    expect(poison?.reason?.error).toMatch(/Agent "m" \(machine counter\.ts\): root\/inline-kid runs inline logic, which no snapshot restores \(xstate #5057\): name it in setup\(\{ actors \}\)/);
    expect(inbox(hive.root, 'client')[0]!.body).toBe('count 1');
  });

  it("an invocation that never settles is ended by the brain's timeoutMs: retried, then poison naming the invocation and the state", async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: { ...counter, timeoutMs: 300 } }, client], supervisor: { poisonAfter: 2, brainRetries: 0, restart: { maxRestarts: 10 } } }));
    const bad = await hive.send({ from: 'client', to: 'm', act: 'request', body: 'hang' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'after' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the next request answered', 60_000);
    const poison = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_POISON');
    expect(poison?.name).toContain(bad.id);
    expect(poison?.reason?.error).toMatch(/still running after 300 ms in state hanging/);
    // Nothing of the hung turn was committed: the machine went on from where it was.
    expect(inbox(hive.root, 'client')[0]!.body).toBe('count 1');
    expect(machineState(hive.root, 'm').snapshot.value).toBe('counting');
  });

  it("a delay whose after was removed from a changed machine is ignored and logged when its timer fires, not sent into the machine", async () => {
    const root = path.join(tempDir(), 'hive');
    const first = await startHive(fastConfig({ root, agents: [{ id: 'm', brain: counter }, client] }));
    await first.send({ from: 'client', to: 'm', act: 'request', body: 'arm' });
    await waitFor(first, () => inbox(root, 'client').length === 1, 'armed');
    await first.close();
    // A minute later (the workers' clock), with the after gone from the machine.
    process.env.HIVE_TEST_CLOCK_SKEW_MS = '61000';
    try {
      const v3 = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'counter-v3.ts') };
      const hive = await startHive(fastConfig({ root, agents: [{ id: 'm', brain: v3 }, client] }));
      await waitFor(hive, () => readLog(root).some((e) => e.type === 'machine.timer-ignored'), 'the ignored timer');
      expect(readLog(root).find((e) => e.type === 'machine.timer-ignored')).toMatchObject({ agent: 'm', state: 'armed', timer: expect.stringMatching(/^xstate:root#xstate\.after\.60000\.counter\.armed$/), reason: expect.stringContaining('no transition') });
      expect(inbox(root, 'client').map((m) => m.body)).toEqual(['armed']); // nothing was sent for it
      await hive.send({ from: 'client', to: 'm', act: 'request', body: 'next' });
      await waitFor(hive, () => inbox(root, 'client').length === 2, 'the next request');
      expect(inbox(root, 'client')[1]!.body).toBe('disarmed');
    } finally {
      delete process.env.HIVE_TEST_CLOCK_SKEW_MS;
    }
  });

  it('a module that exports no machine fails the agent at start, naming the module and the export', async () => {
    const root = path.join(tempDir(), 'hive');
    const broken = createHive(fastConfig({ root, agents: [{ id: 'm', brain: { kind: 'machine', module: path.join(FIXTURES, 'machines', 'not-a-machine.ts') } }] }));
    const err = await broken.start().then(() => null, (e: unknown) => e as { code: string; message: string });
    await broken.close();
    expect(err?.code).toBe('E_BAD_CONFIG');
    expect(err?.message).toMatch(/Agent "m": machine module .*not-a-machine\.ts could not be loaded: .*exports no XState machine as "default" \(found a function\)/);
    expect(readRegistry(root).agents.m?.status).toBe('failed');
    const missing = createHive(fastConfig({ root: path.join(tempDir(), 'hive'), agents: [{ id: 'm', brain: { kind: 'machine', module: '/nowhere/machine.ts' } }] }));
    const err2 = await missing.start().then(() => null, (e: unknown) => e as { message: string });
    await missing.close();
    expect(err2?.message).toContain('Agent "m": machine module /nowhere/machine.ts does not exist');
  });

  it('a snapshot that no longer fits a changed machine fails the agent with the reason and tells god; nothing of its state is reset', async () => {
    const root = path.join(tempDir(), 'hive');
    const first = await startHive(fastConfig({ root, agents: [{ id: 'm', brain: counter }, client] }));
    await first.send({ from: 'client', to: 'm', act: 'request', body: 'arm' });
    await waitFor(first, () => inbox(root, 'client').length === 1, 'armed');
    await first.close();
    const stateFiles = () => ['state.json', 'state.wal'].map((f) => path.join(root, 'agents', 'm', f)).filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    const before = stateFiles();
    expect(before).not.toBe('');
    const v2 = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'counter-v2.ts') };
    const changed = createHive(fastConfig({ root, agents: [{ id: 'm', brain: v2 }, client] }));
    const err = await changed.start().then(() => null, (e: unknown) => e as { code: string; message: string });
    expect(err?.code).toBe('E_BAD_CONFIG');
    expect(err?.message).toMatch(/Agent "m" \(machine counter-v2\.ts\): the committed snapshot no longer fits the machine: .*armed/);
    expect(readRegistry(root).agents.m?.status).toBe('failed');
    await changed.close();
    expect(stateFiles()).toBe(before);
    expect(machineState(root, 'm').snapshot.value).toBe('armed');
    // god is told (its notice is in god's inbox once routed by a running hive)
    const again = await startHive(fastConfig({ root, agents: [{ id: 'm', brain: counter }, client] }));
    await waitFor(again, () => inbox(root, 'god').some((m) => m.subject === 'm cannot start' && /no longer fits/.test(m.body)), "god's notice");
  });
});
