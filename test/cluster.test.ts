import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { startNatsServer, type NatsServer } from './helpers/nats-server.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { createJetStreamTransport, type JetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { parseConfig } from '../src/config/schema.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import fs from 'node:fs';
import { remember } from '../src/memory/remember.ts';
import path from 'node:path';

async function cli(args: string[]) {
  const io = memoryIO('');
  const code = await runCli(args, io.io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

/** A config file with no cluster section, in a folder of its own. */
function plainConfig(): { dir: string; file: string } {
  const dir = tempRoot();
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'hive.config.json');
  fs.writeFileSync(file, JSON.stringify({ root: './hive', agents: [] }));
  return { dir, file };
}

describe('cluster mode: configuration', () => {
  it('runsOn means nothing outside cluster mode, and a server that is not a NATS URL is refused: each mistake names its place', () => {
    const cluster = { servers: ['nats://127.0.0.1:4222'], host: 'h1' };
    expect(() => parseConfig({ root: 'r', agents: [{ id: 'a', brain: { kind: 'echo' }, runsOn: 'h1' }] }, '/tmp')).toThrow(/`agents\[0\]\.runsOn` to be absent outside cluster mode/);
    expect(() => parseConfig({ root: 'r', cluster: { ...cluster, servers: ['http://x'] }, agents: [] }, '/tmp')).toThrow(/cluster\.servers\[0\]/);
    expect(parseConfig({ root: 'r', cluster, agents: [{ id: 'a', brain: { kind: 'echo' }, runsOn: 'h2' }] }, '/tmp').cluster).toMatchObject({ host: 'h1', prefix: 'hive', replicas: 1 });
  });

  it('an agent left unpinned in cluster mode is placed by lease; runsOn outside cluster mode is refused', () => {
    const cfg = parseConfig({ root: 'r', cluster: { servers: ['nats://127.0.0.1:4222'], host: 'h1' }, agents: [{ id: 'a', brain: { kind: 'echo' } }] }, '/tmp');
    expect(cfg.cluster?.leaseMs).toBe(5_000);
    expect(cfg.agents[0]!.runsOn).toBeUndefined();
  });

  it('hive start --host is refused for a config without a cluster section, saying why', async () => {
    const { file } = plainConfig();
    const r = await cli(['start', '--config', file, '--host', 'h1']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--host names this machine in cluster mode, but .*hive\.config\.json has no cluster section \(add one, or name the NATS servers with --cluster\)/);
  });

  it('hive start --cluster: a server that is not a NATS URL, a bad host name, or no host for a config without a cluster section are refused, each naming the flag; nothing is started', async () => {
    const { dir, file } = plainConfig();
    const noHost = await cli(['start', '--config', file, '--cluster', 'nats://127.0.0.1:4222']);
    expect(noHost.code).not.toBe(0);
    expect(noHost.stderr).toMatch(/--cluster runs this machine in cluster mode, but .*hive\.config\.json has no cluster section to name the machine: add --host NAME/);
    const badUrl = await cli(['start', '--config', file, '--cluster', 'nats://127.0.0.1:4222,http://x', '--host', 'h1']);
    expect(badUrl.code).not.toBe(0);
    expect(badUrl.stderr).toMatch(/expected --cluster to be NATS server URLs \(nats:\/\/host:port or tls:\/\/host:port\), comma-separated, got "http:\/\/x"/);
    const badHost = await cli(['start', '--config', file, '--cluster', 'nats://127.0.0.1:4222', '--host', 'GPU 1']);
    expect(badHost.code).not.toBe(0);
    expect(badHost.stderr).toMatch(/expected --host to be a host name .*, got "GPU 1"/);
    expect(fs.existsSync(path.join(dir, 'hive'))).toBe(false);
  });
});

// Two supervisors, one per "machine" (h1, h2), one hive on one nats-server: agents split
// between them, requests and replies crossing from one to the other.
let server: NatsServer | null = null;
const REQUESTS = 400;

interface Machine {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** What it printed up to its ready line. */
  lines: string[];
}

function startMachine(root: string, prefix: string, host: string, mode = 'pinned'): Promise<Machine> {
  const child = startFixture('cluster-host.ts', [root, server!.url, prefix, host, mode]);
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    const { exited } = collectLines(child, (line) => {
      lines.push(line);
      if (line.startsWith('ready ')) resolve({ child, exited, lines });
    });
    void exited.then((x) => reject(new Error(`${host} exited before ready: ${x.code} ${x.signal} ${x.stderr}`)));
  });
}

/**
 * `hive start --host h1`, the real command, on a JSON config: echo-x leased, the client pinned
 * to h1. `byFlags`: the config has no cluster section; `--cluster URL --host h1` make it one
 * (prefix 'hive', the default).
 */
function cliMachine(url: string, prefix: string, byFlags = false) {
  const root = tempRoot();
  const file = path.join(path.dirname(root), `${prefix}.config.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      root,
      agents: [{ id: 'echo-x', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' }, ...(byFlags ? {} : { runsOn: 'h1' }) }],
      ...(byFlags ? {} : { cluster: { servers: [url], host: 'h1', prefix, leaseMs: 2_000 } }),
      audit: { enabled: false },
      inspector: { enabled: false },
    }),
  );
  const flags = byFlags ? ['--cluster', url, '--host', 'h1'] : ['--host', 'h1'];
  const child = spawn(process.execPath, [path.join(process.cwd(), 'scripts', 'hive.mjs'), 'start', '--config', file, ...flags, '--json', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    const { exited } = collectLines(child, (line) => line.includes('"event":"ready"') && resolve());
    void exited.then((x) => reject(new Error(`hive start exited before ready: ${x.code} ${x.stderr}`)));
  });
  return { root, child, ready, closed };
}

/** Exactly one reply per request: none missing, none twice, none to anything else. */
function expectEachAnsweredOnce(got: HiveMessage[], requests: HiveMessage[]): void {
  const byRequest = new Map<string, number>();
  for (const r of got) byRequest.set(r.in_reply_to!, (byRequest.get(r.in_reply_to!) ?? 0) + 1);
  expect(got.length).toBe(requests.length);
  expect([...byRequest.values()].every((n) => n === 1)).toBe(true);
  expect(new Set(byRequest.keys())).toEqual(new Set(requests.map((r) => r.id)));
}

/** A send as a program would make it: tried again (same ids) while NATS does not answer, e.g. while it starts again. */
async function sendRetrying(t: JetStreamTransport, batch: HiveMessage[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return void (await t.send(batch));
    } catch (err) {
      if ((err as { code?: string }).code !== 'E_UNAVAILABLE' || attempt === 5) throw err;
    }
  }
}

async function replies(t: JetStreamTransport): Promise<HiveMessage[]> {
  // A repeated copy (same id, marked by the transport) is passed, as the client would.
  return (await t.read('client', 0)).flatMap((e) => (e.duplicate ? [] : [e.message]));
}

describe('cluster mode: two machines on one nats-server', () => {
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(`${REQUESTS} requests across machines (half through h1's outbox folder, half sent over NATS), the nats-server SIGKILLed and started again under load, then the supervisor of h2 SIGKILLed and restarted: every request answered exactly once, each agent's state its committed history`, async () => {
    const prefix = `c${process.pid}`;
    const [r1, r2] = [tempRoot(), tempRoot()];
    let h1 = await startMachine(r1, prefix, 'h1');
    let h2 = await startMachine(r2, prefix, 'h2');
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    const requests: HiveMessage[] = [];
    try {
      // Each machine says where it is, where every agent runs, and what its setup cannot keep.
      const status = await cli(['status', '--root', r1]);
      expect(status.stdout).toMatch(/cluster: this machine is h1, on nats:\/\/127\.0\.0\.1:\d+ \(nats-server \d+\.\d+\.\d+, 1 replica, prefix c\d+\)/);
      expect(status.stdout).toMatch(/warning: each stream has 1 replica/);
      expect(status.stdout).toMatch(/echo-a .* h1 \(here\)/);
      expect(status.stdout).toMatch(/echo-b .* h2\n/);
      for (let i = 0; i < REQUESTS; i += 20) {
        const batch = Array.from({ length: 20 }, (_, k) => createMessage({ from: 'client', to: (i + k) % 2 === 0 ? 'echo-a' : 'echo-b', act: 'request', body: `req ${i + k}` }));
        // Both ingresses: h1's outbox folder, and a send over NATS as the client (it runs on h1).
        if ((i / 20) % 2 === 0) writeOutbox(r1, batch);
        else await sendRetrying(t, batch);
        requests.push(...batch);
        if (i === REQUESTS / 4) {
          // The nats-server process crashes (SIGKILL; started again on its store, as a
          // service manager would): every connection reconnects, nothing is lost or repeated.
          await server!.crash();
        }
        if (i === REQUESTS / 2) {
          h2.child.kill('SIGKILL');
          expect((await h2.exited).signal).toBe('SIGKILL');
          h2 = await startMachine(r2, prefix, 'h2');
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      // Within 25 s of the last send: after the NATS crash, a feed whose consumer was gone
      // held h1's replies back until its heartbeats were missed (~37 s, all answered in the end).
      const deadline = Date.now() + 25_000;
      while ((await replies(t)).length < REQUESTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      await new Promise((r) => setTimeout(r, 500)); // a duplicate would show up by now
      expectEachAnsweredOnce(await replies(t), requests);
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
      // h1's status reads the cursor and depth of h2's agent from JetStream.
      const json = JSON.parse((await cli(['status', '--root', r1, '--json'])).stdout) as { actors: { id: string; cursor: number; inboxDepth: number }[] };
      expect(json.actors.find((a) => a.id === 'echo-b')).toMatchObject({ cursor: requests.filter((r) => r.to === 'echo-b').length, inboxDepth: 0 });
      // The people in the loop, on the other machine: a question from the client (h1) to god
      // is listed by h2's `hive ask`, answered with h2's `hive answer`, and the answer reaches
      // the client; `hive inbox` on h2 shows the client's inbox (a JetStream stream).
      const question = createMessage({ from: 'client', to: 'god', act: 'query', body: 'ship it?', needs_human: true });
      await t.send([question]);
      let asked = '';
      for (const until = Date.now() + 15_000; !asked.includes(question.id) && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) asked = (await cli(['ask', '--root', r2])).stdout;
      expect(asked).toContain(`ASK ME ${question.id}  from client`);
      expect((await cli(['answer', question.id, '--body', 'yes', '--root', r2])).code).toBe(0);
      let answer: HiveMessage | undefined;
      for (const until = Date.now() + 15_000; !answer && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
        answer = (await replies(t)).find((m) => m.in_reply_to === question.id);
      }
      expect(answer).toMatchObject({ from: 'god', body: 'yes', conversation: question.conversation });
      const inbox = await cli(['inbox', 'client', '--root', r2, '--json']);
      expect((JSON.parse(inbox.stdout) as { messages: unknown[] }).messages).toHaveLength(REQUESTS + 1);
    } finally {
      t.close();
      for (const m of [h1, h2]) m.child.kill('SIGTERM');
      const ends = await Promise.all([h1.exited, h2.exited]);
      for (const e of ends) expect(e.code, e.stderr).toBe(0);
    }
  }, 120_000);

  it('failover: the machine holding an unpinned agent\'s lease is SIGKILLed under load; the survivor takes the agent over from its last commit and every request is answered exactly once; the dead machine comes back and duplicates nothing', async () => {
    const prefix = `f${process.pid}`;
    const [r1, r2] = [tempRoot(), tempRoot()];
    let h1 = await startMachine(r1, prefix, 'h1', 'leased'); // first up: it takes echo-x's lease
    let h2 = await startMachine(r2, prefix, 'h2', 'leased');
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    const requests: HiveMessage[] = [];
    const send = (n: number) => {
      const batch = Array.from({ length: n }, (_, k) => createMessage({ from: 'client', to: 'echo-x', act: 'request', body: `req ${requests.length + k}` }));
      writeOutbox(r2, batch); // the client runs on h2, the survivor
      requests.push(...batch);
    };
    const answered = async () => (await replies(t)).length;
    const waitFor = async (n: number, ms: number) => {
      const deadline = Date.now() + ms;
      while ((await answered()) < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return answered();
    };
    try {
      send(100);
      expect(await waitFor(100, 20_000)).toBe(100);
      const running = JSON.parse(fs.readFileSync(path.join(r1, 'log.jsonl'), 'utf8').trim().split('\n').filter((l) => l.includes('cluster.lease-acquired')).at(-1) ?? '{}');
      expect(running).toMatchObject({ agent: 'echo-x', host: 'h1' });
      // Under load: more requests, then h1 dies with some of them in flight.
      send(100);
      await new Promise((r) => setTimeout(r, 30));
      const killedAt = Date.now();
      h1.child.kill('SIGKILL');
      expect((await h1.exited).signal).toBe('SIGKILL');
      send(100);
      expect(await waitFor(300, 30_000)).toBe(300);
      const failoverMs = Date.now() - killedAt;
      process.stdout.write(`cluster failover: h1 killed → all 300 answered in ${failoverMs} ms (lease 2 s)\n`);
      expect(failoverMs).toBeLessThan(10_000);
      // h1 comes back: h2 holds the lease, so echo-x stays there; nothing is answered twice.
      h1 = await startMachine(r1, prefix, 'h1', 'leased');
      send(50);
      expect(await waitFor(350, 20_000)).toBe(350);
      await new Promise((r) => setTimeout(r, 1_000)); // a duplicate would show up by now
      expectEachAnsweredOnce(await replies(t), requests);
      const link = t.agent('echo-x');
      const at = await link.restore();
      expect(at.context.handled).toBe(requests.length);
      expect((at.context.brainState as { echoed: number }).echoed).toBe(requests.length);
      link.close();
      const log2 = fs.readFileSync(path.join(r2, 'log.jsonl'), 'utf8');
      expect(log2).toMatch(/"type":"cluster\.lease-acquired","agent":"echo-x","host":"h2"/);
    } finally {
      t.close();
      for (const m of [h1, h2]) m.child.kill('SIGTERM');
      const ends = await Promise.all([h1.exited, h2.exited]);
      for (const e of ends) expect(e.code, e.stderr).toBe(0);
    }
  }, 120_000);
  it("failover keeps a conversational agent's conversation and memory, and the inspector and hive status show which machine runs it: after its machine is SIGKILLed the survivor goes on with the history the agent had, memory written on one machine is mirrored on every one, and a stale mirror catches up when its machine returns", async () => {
    const prefix = `talk${process.pid}`;
    const [r1, r2] = [tempRoot(), tempRoot()];
    let h1 = await startMachine(r1, prefix, 'h1', 'talk'); // first up: it takes talker's lease
    let h2 = await startMachine(r2, prefix, 'h2', 'talk');
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    const bodies: string[] = [];
    /** One request at a time (the client on h2); the reply says how much history the brain was shown. */
    const ask = async () => {
      const m = createMessage({ from: 'client', to: 'talker', act: 'request', body: `question ${bodies.length}` });
      writeOutbox(r2, [m]);
      const deadline = Date.now() + 30_000;
      for (;;) {
        const reply = (await replies(t)).find((r) => r.in_reply_to === m.id);
        if (reply) return bodies.push(reply.body);
        if (Date.now() > deadline) throw new Error(`no reply to ${m.body}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const memoryOf = (root: string) => fs.readFileSync(path.join(root, 'agents', 'talker', 'memory.md'), 'utf8');
    const until = async (what: string, ok: () => boolean) => {
      const deadline = Date.now() + 15_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      for (let i = 0; i < 4; i++) await ask();
      // Where it runs, as h2's inspector and hive status tell it: on h1, which holds the lease.
      const inspector = h2.lines.find((l) => l.startsWith('inspector '))!.slice('inspector '.length);
      /** What the inspector shows once it says talker runs on `machine` (or after 15 s). */
      const shownWhen = async (machine: string): Promise<Record<string, string | null | undefined>> => {
        for (const deadline = Date.now() + 15_000; ; await new Promise((r) => setTimeout(r, 100))) {
          const s = (await (await fetch(inspector.replace('/?', '/api/state?'))).json()) as { actors: { id: string; runsOn?: string | null }[]; clusterHost?: string };
          const shown: Record<string, string | null | undefined> = { host: s.clusterHost, ...Object.fromEntries(s.actors.filter((a) => a.id === 'talker' || a.id === 'client').map((a) => [a.id, a.runsOn])) };
          if (shown.talker === machine || Date.now() > deadline) return shown;
        }
      };
      expect(await shownWhen('h1')).toEqual({ host: 'h2', talker: 'h1', client: 'h2' });
      // The inspector on h2 reads conversations through the cluster: talker's inbox is in JetStream, not in h2's folder.
      const found = (await (await fetch(inspector.replace('/?', '/api/search?q=question%200&'))).json()) as { messages: { body: string; deliveries: { agent: string; handled: boolean }[] }[] };
      expect(found.messages.find((m) => m.body === 'question 0')?.deliveries).toEqual([expect.objectContaining({ agent: 'talker', handled: true })]);
      const status = await cli(['status', '--root', r2]);
      expect(status.stdout).toMatch(/^talker .* h1 \(leased\)$/m);
      expect(status.stdout).toMatch(/^client .* h2 \(here\)$/m);
      await remember(r2, 'talker', 'Deploys go out on Tuesdays'); // written on h2, the agent runs on h1
      await until("h1's mirror of the memory", () => memoryOf(r1).includes('Deploys go out on Tuesdays'));
      h1.child.kill('SIGKILL');
      expect((await h1.exited).signal).toBe('SIGKILL');
      for (let i = 0; i < 4; i++) await ask(); // answered by h2 once it holds the lease
      expect(await shownWhen('h2')).toEqual({ host: 'h2', talker: 'h2', client: 'h2' });
      // Each turn saw every earlier turn (two lines each): none lost at the failover, none briefed.
      expect(bodies).toEqual(bodies.map((_, i) => `heard "question ${i}" (history ${2 * i})`));
      expect(fs.readFileSync(path.join(r2, 'log.jsonl'), 'utf8')).toMatch(/"type":"session\.replica-restored","agent":"talker"/);
      expect(memoryOf(r2)).toContain('Deploys go out on Tuesdays');
      await remember(r2, 'talker', 'Rollbacks need two approvals'); // while h1 is down
      h1 = await startMachine(r1, prefix, 'h1', 'talk');
      await until("h1's mirror to catch up", () => memoryOf(r1).includes('Rollbacks need two approvals'));
      expect(memoryOf(r1)).toBe(memoryOf(r2));
      expect(memoryOf(r1).match(/Deploys go out on Tuesdays/g)).toHaveLength(1);
    } finally {
      t.close();
      for (const m of [h1, h2]) m.child.kill('SIGTERM');
      const ends = await Promise.all([h1.exited, h2.exited]);
      for (const e of ends) expect(e.code, e.stderr).toBe(0);
    }
  }, 120_000);
  it('hive start, the real command, runs a machine of a cluster: it takes the lease of an unpinned agent, answers across NATS, stops gracefully', async () => {
    const prefix = `cli${process.pid}`;
    const { root, child, ready, closed } = cliMachine(server!.url, prefix);
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    try {
      await ready;
      const m = createMessage({ from: 'client', to: 'echo-x', act: 'request', body: 'over the CLI' });
      writeOutbox(root, [m]);
      const deadline = Date.now() + 20_000;
      while (!(await replies(t)).some((r) => r.in_reply_to === m.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await replies(t)).filter((r) => r.in_reply_to === m.id)).toHaveLength(1);
      expect(fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8')).toMatch(/"type":"cluster\.lease-acquired","agent":"echo-x","host":"h1"/);
    } finally {
      t.close();
      child.kill('SIGTERM');
      expect(await closed).toBe(0);
    }
  }, 60_000);
  it('hive start --cluster URL --host h1 on a config without a cluster section runs a machine of the cluster (prefix hive): it answers across NATS, hive status names the machine, it stops gracefully', async () => {
    const own = await startNatsServer(); // its own server: the default prefix must not meet another test's streams
    const { root, child, ready, closed } = cliMachine(own.url, `flags${process.pid}`, true);
    const t = await createJetStreamTransport({ servers: [own.url], prefix: 'hive' });
    try {
      await ready;
      const m = createMessage({ from: 'client', to: 'echo-x', act: 'request', body: 'cluster by flags' });
      writeOutbox(root, [m]);
      const deadline = Date.now() + 20_000;
      while (!(await replies(t)).some((r) => r.in_reply_to === m.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await replies(t)).filter((r) => r.in_reply_to === m.id)).toHaveLength(1);
      const status = await cli(['status', '--root', root]);
      expect(status.stdout).toMatch(/cluster: this machine is h1, on nats:\/\/127\.0\.0\.1:\d+ \(nats-server \d+\.\d+\.\d+, 1 replica, prefix hive\)/);
    } finally {
      t.close();
      child.kill('SIGTERM');
      expect(await closed).toBe(0);
      await own.stop();
    }
  }, 60_000);
  it('a graceful stop of hive start does not wait out NATS when every server is gone: it ends within seconds, exit 0', async () => {
    const own = await startNatsServer();
    const { root, child, ready, closed } = cliMachine(own.url, `gone${process.pid}`);
    await ready;
    await own.stop();
    // Until the agent waits on NATS (its poll's read timed out): the shortage a stop must not wait out.
    const paused = () => fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8').includes('"type":"actor.paused","agent":"echo-x","reason":"NATS unreachable"');
    for (const deadline = Date.now() + 30_000; !paused() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100));
    expect(paused()).toBe(true);
    const t0 = Date.now();
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
    const ms = Date.now() - t0;
    process.stdout.write(`graceful stop with NATS gone: ${ms} ms\n`);
    expect(ms).toBeLessThan(10_000); // it took about 17 s before the stop stopped waiting on NATS
  }, 60_000);
  it("a machine SIGKILLed after an agent's commit and before its conversation reached the cluster: the next machine restores the cluster's copy (one commit behind) and the commit record's turn, so the brain sees every turn", async () => {
    const prefix = `convcrash${process.pid}`;
    const [r1, r2] = [tempRoot(), tempRoot()];
    const t = await createJetStreamTransport({ servers: [server!.url], prefix });
    const bodies: string[] = [];
    const ask = async (root: string, wait = true) => {
      const m = createMessage({ from: 'client', to: 'talker', act: 'request', body: `question ${bodies.length}` });
      writeOutbox(root, [m]);
      for (const deadline = Date.now() + 30_000; wait; await new Promise((r) => setTimeout(r, 50))) {
        const reply = (await replies(t)).find((r) => r.in_reply_to === m.id);
        if (reply) return bodies.push(reply.body);
        if (Date.now() > deadline) throw new Error(`no reply to ${m.body}`);
      }
      return bodies.push('(not waited for)');
    };
    let h1 = await startMachine(r1, prefix, 'h1', 'talk'); // alone: it holds talker's lease
    let h2: Machine | null = null;
    try {
      await ask(r1);
      await ask(r1); // the cluster's copy is at commit 2 now
      h1.child.kill('SIGTERM'); // the lease given back
      expect((await h1.exited).code).toBe(0);
      h1 = await startMachine(r1, prefix, 'h1', 'talk-crash');
      await ask(r1, false); // commit 3 made; h1's agent stops before saving its conversation
      const reached = path.join(r1, 'crash-point.reached');
      for (const deadline = Date.now() + 30_000; !fs.existsSync(reached); await new Promise((r) => setTimeout(r, 20))) if (Date.now() > deadline) throw new Error('crash point not reached');
      h1.child.kill('SIGKILL');
      await h1.exited;
      h2 = await startMachine(r2, prefix, 'h2', 'talk'); // takes the lease once h1's expires
      await ask(r2);
      // The reply to question 2 went out once (routed from its commit), and question 3 saw all three turns before it.
      const all = await replies(t);
      expect(all.filter((r) => r.body.startsWith('heard "question 2"'))).toHaveLength(1);
      expect(bodies[3]).toBe('heard "question 3" (history 6)');
      expect(fs.readFileSync(path.join(r2, 'log.jsonl'), 'utf8')).toMatch(/"type":"session\.caught-up","agent":"talker"/);
    } finally {
      t.close();
      for (const m of [h1, h2]) if (m && m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGTERM');
      await Promise.all([h1.exited, h2?.exited]);
    }
  }, 120_000);
});
