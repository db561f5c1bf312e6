import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { tempRoot } from './helpers/temp.ts';
import { createHive } from '../src/hive.ts';
import { ensureAgentsReporting, ensureHive } from '../src/layout/ensure.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { readLog } from '../src/log/read.ts';
import { hostedSpecOf, type AgentRecord } from '../src/supervisor/agent-record.ts';
import { TurnClock } from '../src/agent/turn-clock.ts';

/**
 * An agent whose folder this start made (src/layout/ensure.ts, ensureAgentsReporting) has
 * nothing of an earlier run in it: its first worker restores it as new without reading its
 * files. Every later start of it (a restarted worker, the next supervisor) reads them.
 */

const replies = (root: string) => readInbox(root, 'client', 0).entries.map((e) => e.message.in_reply_to);

describe('agents whose folders this start made', () => {
  it('the hint goes to the first worker only: the spec of a restart does not carry it', async () => {
    const record = { entry: { id: 'a', name: 'a', role: 'agent' }, brain: { kind: 'echo' }, turnClock: new TurnClock(), madeNow: true } as unknown as AgentRecord;
    expect((await hostedSpecOf(record)).madeNow).toBe(true);
    expect((await hostedSpecOf(record)).madeNow).toBeUndefined();
  });

  it('a filesystem link restores a made-now agent without opening, listing or lstat-ing anything, and commits on from there', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const { created } = await ensureAgentsReporting(root, [{ id: 'a' }]);
    expect(created.has('a')).toBe(true);
    const transport = createFsTransport(root);
    try {
      const link = transport.agent('a');
      // (The commit log's size is still looked up once, by the StateStore it opens.)
      const spies = [vi.spyOn(fs, 'openSync'), vi.spyOn(fs, 'readdirSync'), vi.spyOn(fs, 'lstatSync')];
      const at = await link.restore({ madeNow: true });
      const calls = spies.reduce((n, s) => n + s.mock.calls.length, 0);
      for (const s of spies) s.mockRestore();
      expect(calls).toBe(0);
      expect(at).toMatchObject({ from: 'fresh', commit: 0, context: { cursor: 0, handled: 0 } });
      expect(await link.commit({ ...at.context, cursor: 0, turns: 1 }, [])).toBe(1);
      expect(readStateFile(root, 'a')?.commit).toBe(1);
    } finally {
      transport.close();
    }
  });

  it('a new hive answers; its agent worker, killed, restores its commits; the next supervisor too: every request answered once', async () => {
    const config = fastConfig({ agents: [{ id: 'e', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }] });
    let hive = await startHive(config);
    const sent = [await hive.send({ from: 'client', to: 'e', act: 'request', body: 'one' }), await hive.send({ from: 'client', to: 'e', act: 'request', body: 'two' })];
    await waitFor(hive, () => replies(hive.root).length === 2, 'two replies');
    // One turn or two, as the requests met the agent: the restores name what was committed.
    const beforeKill = readStateFile(config.root!, 'e')!.commit;
    const restarted = nextEvent(hive, 'restarted', (ev) => ev.agents.includes('e'));
    await hive.supervisor.workerOf('e')!.terminate();
    await restarted;
    sent.push(await hive.send({ from: 'client', to: 'e', act: 'request', body: 'three' }));
    await waitFor(hive, () => replies(hive.root).length === 3, 'the reply after the crash');
    await hive.close();
    const beforeRestart = readStateFile(config.root!, 'e')!.commit;
    hive = createHive(config);
    await hive.start();
    try {
      sent.push(await hive.send({ from: 'client', to: 'e', act: 'request', body: 'four' }));
      await waitFor(hive, () => replies(hive.root).length === 4, 'the reply after the restart');
    } finally {
      await hive.close();
    }
    expect(replies(config.root!).sort()).toEqual(sent.map((m) => m.id).sort());
    expect((readStateFile(config.root!, 'e')?.snapshot.context.brainState as { echoed?: number }).echoed).toBe(4);
    const restores = readLog(config.root!).filter((ev) => ev.type === 'actor.restored' && ev.agent === 'e');
    expect(beforeKill).toBeGreaterThanOrEqual(1);
    expect(beforeRestart).toBe(beforeKill + 1);
    expect(restores.map((ev) => [ev.from, ev.commit])).toEqual([
      ['fresh', 0],
      ['state', beforeKill],
      ['state', beforeRestart],
    ]);
  });
});
