import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { fastConfig, startHive } from './helpers/hive.ts';
import { natsServerForFile } from './helpers/nats-per-file.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';

/**
 * The router of a cluster machine takes a commit heard on NATS as a light look (the
 * sender's local outbox folder is not read where a working watch would report a file
 * there: docs/architecture.md, "The commit record is the outbox", light looks). A file put in that folder meanwhile must be
 * routed at once, never left for the router's poll.
 */
const server = natsServerForFile();

describe('cluster mode: light looks', () => {
  it("a file put in the outbox folder of an agent whose commits are heard on NATS all along is routed at once, not at the router's poll", async () => {
    const root = tempRoot();
    const prefix = `light${process.pid}`;
    const hive = await startHive(
      fastConfig({
        root,
        cluster: { servers: [server.url], prefix, host: 'h1', leaseMs: 2_000 },
        agents: [
          { id: 'echo-a', brain: { kind: 'echo' }, runsOn: 'h1' },
          { id: 'client', brain: { kind: 'external' }, runsOn: 'h1' },
        ],
        // Out of reach: a file that waited for a poll would wait a minute.
        router: { pollMs: 60_000 },
        supervisor: { inboxPollMs: 60_000 },
      }),
    );
    const reader = await createJetStreamTransport({ servers: [server.url], prefix });
    const got = async () => (await reader.read('client', 0)).map((e) => e.message);
    const until = async (check: () => Promise<boolean>, what: string, ms: number) => {
      for (const end = Date.now() + ms; !(await check()); ) {
        if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    let sending = true;
    // echo-a commits all along: each commit heard on NATS asks for a light look at echo-a.
    const load = (async () => {
      while (sending) {
        await hive.send({ from: 'client', to: 'echo-a', act: 'request', body: 'ping' });
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      await until(async () => (await got()).length >= 5, 'replies of echo-a', 30_000);
      for (let i = 0; i < 3; i++) {
        // As a person or a program would: a message from echo-a, put in its outbox folder.
        const note = createMessage({ from: 'echo-a', to: 'client', act: 'inform', body: `written by hand ${i}` });
        const t0 = Date.now();
        writeOutbox(root, [note]);
        await until(async () => (await got()).some((m) => m.id === note.id), `the file ${i} to be routed`, 20_000);
        const ms = Date.now() - t0;
        process.stdout.write(`cluster light looks: a file in echo-a's outbox routed in ${ms} ms amid its NATS commits\n`);
        expect(ms).toBeLessThan(5_000);
      }
    } finally {
      sending = false;
      await load;
      reader.close();
      await hive.close();
    }
  }, 90_000);
});
