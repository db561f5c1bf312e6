import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { natsUnavailable, startNatsServer, type NatsServer } from './helpers/nats-server.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { createJetStreamTransport, type JetStreamTransport } from '../src/queue/jetstream-transport.ts';

// Two supervisors, one per "machine" (h1, h2), one hive on one nats-server: agents split
// between them, requests and replies crossing from one to the other.
const missing = natsUnavailable();
let server: NatsServer | null = null;
const REQUESTS = 400;

interface Machine {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

function startMachine(root: string, prefix: string, host: string): Promise<Machine> {
  const child = startFixture('cluster-host.ts', [root, server!.url, prefix, host]);
  return new Promise((resolve, reject) => {
    const { exited } = collectLines(child, (line) => {
      if (line.startsWith('ready ')) resolve({ child, exited });
    });
    void exited.then((x) => reject(new Error(`${host} exited before ready: ${x.code} ${x.signal} ${x.stderr}`)));
  });
}

async function replies(t: JetStreamTransport): Promise<HiveMessage[]> {
  return (await t.read('client', 0)).map((e) => e.message);
}

describe.skipIf(missing !== null)('cluster mode: two machines on one nats-server', () => {
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(`${REQUESTS} requests across machines, the supervisor of h2 SIGKILLed under load and restarted: every request answered exactly once, each agent's state its committed history`, async () => {
    const prefix = `c${process.pid}`;
    const [r1, r2] = [tempRoot(), tempRoot()];
    let h1 = await startMachine(r1, prefix, 'h1');
    let h2 = await startMachine(r2, prefix, 'h2');
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    const requests: HiveMessage[] = [];
    try {
      for (let i = 0; i < REQUESTS; i += 20) {
        const batch = Array.from({ length: 20 }, (_, k) => createMessage({ from: 'client', to: (i + k) % 2 === 0 ? 'echo-a' : 'echo-b', act: 'request', body: `req ${i + k}` }));
        writeOutbox(r1, batch); // h1's local ingress: acknowledged once this returns
        requests.push(...batch);
        if (i === REQUESTS / 2) {
          h2.child.kill('SIGKILL');
          expect((await h2.exited).signal).toBe('SIGKILL');
          h2 = await startMachine(r2, prefix, 'h2');
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      const deadline = Date.now() + 60_000;
      while ((await replies(t)).length < REQUESTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      await new Promise((r) => setTimeout(r, 500)); // a duplicate would show up by now
      const got = await replies(t);
      const byRequest = new Map<string, number>();
      for (const r of got) byRequest.set(r.in_reply_to!, (byRequest.get(r.in_reply_to!) ?? 0) + 1);
      expect(got.length).toBe(REQUESTS);
      expect([...byRequest.values()].every((n) => n === 1)).toBe(true);
      expect(new Set(byRequest.keys())).toEqual(new Set(requests.map((r) => r.id)));
      // Each echo agent's last commit (in JetStream) holds exactly what it handled.
      for (const agent of ['echo-a', 'echo-b']) {
        const mine = requests.filter((r) => r.to === agent).length;
        const link = t.agent(agent);
        const at = await link.restore();
        expect(at.context.handled, agent).toBe(mine);
        expect((at.context.brainState as { echoed: number }).echoed, agent).toBe(mine);
        expect(at.context.cursor, agent).toBe(mine);
        link.close();
      }
    } finally {
      t.close();
      for (const m of [h1, h2]) m.child.kill('SIGTERM');
      const ends = await Promise.all([h1.exited, h2.exited]);
      for (const e of ends) expect(e.code, e.stderr).toBe(0);
    }
  }, 120_000);
});
