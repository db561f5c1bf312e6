import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { crashRouter, fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { listSegments } from '../src/queue/inbox-log.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { readSendRouted } from '../src/queue/send-log.ts';

// hive.send() while the router runs goes straight to the router's thread and resolves once
// the recipient's inbox holds the message durably (src/router/ingress.ts); sends the
// router did not acknowledge before its thread ended are written to the send log.

const client = { id: 'client', brain: { kind: 'external' as const } };
const sink = { id: 'sink', brain: { kind: 'external' as const } };

const filesIn = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => !n.startsWith('.')) : []);

describe('hive.send() straight to the router', () => {
  it('resolves with the message already durable in the inbox, and writes nothing before it: no send log, no outbox file', async () => {
    const hive = await startHive(fastConfig({ agents: [client, sink] }));
    for (let i = 0; i < 20; i++) {
      const sent = await hive.send({ from: 'client', to: 'sink', act: 'inform', body: `n${i}` });
      // No wait: the acknowledgement came after the inbox's flush.
      expect(readInbox(hive.root, 'sink', 0).entries.map((e) => e.message.id)).toContain(sent.id);
    }
    expect(readInbox(hive.root, 'sink', 0).entries.map((e) => e.message.body)).toEqual(Array.from({ length: 20 }, (_, i) => `n${i}`));
    expect(filesIn(agentPaths(hive.root, 'client').sendLog)).toEqual([]);
    expect(filesIn(agentPaths(hive.root, 'client').outbox)).toEqual([]);
  });

  it('an unknown recipient: the send resolves once the message is dead-lettered with its reason and god is told', async () => {
    const hive = await startHive(fastConfig({ agents: [client, sink] }));
    const told = nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_UNKNOWN_AGENT');
    const sent = await hive.send({ from: 'client', to: 'nobody', act: 'inform', body: 'lost?' });
    expect(fs.existsSync(`${hive.root}/dead-letter/${sent.id}.json`)).toBe(true);
    expect(JSON.parse(fs.readFileSync(`${hive.root}/dead-letter/${sent.id}.json.reason.json`, 'utf8'))).toMatchObject({ code: 'E_UNKNOWN_AGENT', source: 'hive.send() by client' });
    await told;
  });

  it('sends in flight when the router thread ends are written to the send log: every one resolves and each is delivered exactly once', async () => {
    const hive = await startHive(fastConfig({ agents: [client, sink], supervisor: { restart: { backoff: { initialMs: 300, maxMs: 300 } } } }));
    const N = 3_000;
    const first = nextEvent(hive, 'delivered', (d) => d.agent === 'sink');
    const sends = Array.from({ length: N }, (_, i) => hive.send({ from: 'client', to: 'sink', act: 'inform', body: `m${i}` }));
    await first; // the router is routing them: end its thread now, with most still in flight
    await crashRouter(hive);
    const sent = await Promise.all(sends);
    await waitFor(hive, () => readInbox(hive.root, 'sink', 0).entries.length >= N, 'every send delivered');
    await new Promise((r) => setTimeout(r, 300)); // anything delivered twice would show by now
    const ids = readInbox(hive.root, 'sink', 0).entries.map((e) => e.message.id);
    expect(ids.length).toBe(N);
    expect(new Set(ids)).toEqual(new Set(sent.map((m) => m.id)));
    // The fallback ran: the send log holds the sends the router had not acknowledged, routed since.
    expect(listSegments(agentPaths(hive.root, 'client').sendLog).segments.length).toBeGreaterThan(0);
    expect(readSendRouted(hive.root, 'client')).toBeGreaterThan(0);
  });

  it('per sender, order holds across the router ending and coming back: sends made meanwhile, and the ones after, arrive in the order they were made', async () => {
    const hive = await startHive(fastConfig({ agents: [client, sink] }));
    // The main thread's flushes (the send log's) take 20 ms, the router's do not: a group of
    // the send log is still being flushed when the router comes back and takes new sends.
    const realFdatasync = fs.fdatasync;
    fs.fdatasync = ((fd: number, done: (err: NodeJS.ErrnoException | null) => void) => realFdatasync(fd, (err) => setTimeout(() => done(err), 20))) as typeof fs.fdatasync;
    const sends: Promise<unknown>[] = [];
    let n = 0;
    // A stream of sends, never awaited one by one: some are in flight whenever the router
    // ends, some while it is away (the send log), some as it comes back.
    const stream = setInterval(() => {
      for (let k = 0; k < 1; k++) sends.push(hive.send({ from: 'client', to: 'sink', act: 'inform', body: `${n++}` }));
    }, 1);
    try {
      for (let crash = 0; crash < 5; crash++) {
        await waitFor(hive, () => hive.supervisor.routerWorker() !== null, 'the router back');
        await new Promise((r) => setTimeout(r, 300));
        await crashRouter(hive);
      }
      await waitFor(hive, () => hive.supervisor.routerWorker() !== null, 'the router back');
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      clearInterval(stream);
      fs.fdatasync = realFdatasync;
    }
    await Promise.all(sends);
    await waitFor(hive, () => readInbox(hive.root, 'sink', 0).entries.length >= n, 'every send delivered');
    const bodies = readInbox(hive.root, 'sink', 0).entries.map((e) => Number(e.message.body));
    expect(bodies).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(listSegments(agentPaths(hive.root, 'client').sendLog).segments.length).toBeGreaterThan(0);
  });
});
