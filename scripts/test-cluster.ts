// npm run test:cluster — one hive over three machines, each in its own network namespace
// (ip netns, a veth pair into a bridge): a three-node nats-server cluster with R3 streams
// and a supervisor per machine. Six echo agents are placed by lease; the client runs on h1.
// While BENCH-free load runs (TEST_CLUSTER_REQUESTS requests, default 2,000):
//   1. h3 (started first, so it holds every agent's lease) has its supervisor and its
//      nats-server SIGKILLed: its agents resume on h1 and h2; then h3 comes back
//      (nats-server and supervisor) and rejoins;
//   2. h2 is cut off (its link down) for 8 s and healed.
// Invariants: every request answered exactly once (0 lost, 0 duplicated); each agent's last
// commit counts exactly the requests sent to it; nothing arrives twice after the returns;
// h3 held every agent's lease before its kill and the survivors took each over before it
// came back (from the machines' event logs);
// every memory written meanwhile (through the cluster) is there once and every machine's
// mirror of it equals the cluster's.
// The report says how many leases each machine took and lost (agents moving between them).
// Needs root (network namespaces) and nats-server; prints a JSON report, exit 1 on a breach.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { writeOutboxAsync } from '../src/queue/outbox.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { natsUnavailable } from '../test/helpers/nats-server.ts';
import { remember } from '../src/memory/remember.ts';
import { checkMemoryMirrors } from '../src/chaos/machine-invariants.ts';
import { MachineNetwork } from '../src/chaos/netns.ts';
import { bundledFixture, bundleFixtures } from '../test/helpers/fixture-bundles.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(REPO, 'test', 'fixtures', 'cluster-host.ts');
const REQUESTS = Number(process.env.TEST_CLUSTER_REQUESTS ?? 2_000);
const AGENTS = Array.from({ length: 6 }, (_, i) => `echo-${i}`);
const HOSTS = ['h1', 'h2', 'h3'] as const;
const tag = `hv${process.pid % 10_000}`;
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-test-cluster-'));
const net = new MachineNetwork(tag, HOSTS, process.pid % 200);
const ipOf = (h: string) => net.ipOf(h);
const log = (what: string) => {
  stage = what;
  process.stderr.write(`test:cluster: ${what}\n`);
};

function skip(why: string): never {
  process.stdout.write(`${JSON.stringify({ test: 'cluster', skipped: why }, null, 2)}\n`);
  process.exit(0);
}

if (natsUnavailable()) skip(natsUnavailable()!);
if (MachineNetwork.unavailable()) skip(MachineNetwork.unavailable()!);

// ---- the processes of each machine -----------------------------------------------------
const children = new Set<ChildProcess>();
function inNs(h: string, cmd: string, args: string[], onLine?: (line: string) => void): { child: ChildProcess; exited: Promise<void>; stderr: () => string } {
  const [command, ...pre] = [...net.wrap(h), cmd];
  const child = spawn(command!, [...pre, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + String(d)).slice(-8000)));
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += String(d);
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      onLine?.(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => (children.delete(child), resolve())));
  return { child, exited, stderr: () => err };
}

const nats = new Map<string, ReturnType<typeof inNs>>();
async function startNats(h: string): Promise<void> {
  const conf = path.join(base, `nats-${h}.conf`);
  const routes = HOSTS.map((x) => `nats://${ipOf(x)}:6222`).join(', ');
  fs.writeFileSync(conf, `server_name: ${h}\nlisten: ${ipOf(h)}:4222\njetstream { store_dir: "${path.join(base, `store-${h}`)}" }\ncluster { name: ${tag}, listen: ${ipOf(h)}:6222, routes: [${routes}] }\n`);
  const p = inNs(h, 'nats-server', ['-c', conf]);
  nats.set(h, p);
  const deadline = Date.now() + 15_000;
  while (!/Server is ready/.test(p.stderr())) {
    if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`nats-server on ${h} did not start:\n${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Each machine runs the fixture compiled (test/helpers/fixture-bundles.ts): through tsx's
// loader a supervisor took about twice the time and CPU to start.
await bundleFixtures();
const fixtureArgs = (): string[] => {
  const bundle = bundledFixture('cluster-host.ts');
  return bundle ? [bundle] : ['--import', 'tsx', FIXTURE];
};
const servers = HOSTS.map((h) => `nats://${ipOf(h)}:4222`).join(',');
const prefix = `${tag}`;
const supervisors = new Map<string, ReturnType<typeof inNs>>();
async function startSupervisor(h: string): Promise<void> {
  let ready = false;
  const p = inNs(h, process.execPath, [...fixtureArgs(), path.join(base, `root-${h}`), servers, prefix, h, 'netns'], (line) => {
    if (line.startsWith('ready ')) ready = true;
  });
  supervisors.set(h, p);
  const deadline = Date.now() + 60_000;
  while (!ready) {
    if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`supervisor on ${h} did not get ready:\n${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function kill(p: ReturnType<typeof inNs> | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null) return;
  p.child.kill('SIGKILL');
  await p.exited;
}

// ---- the run ---------------------------------------------------------------------------
// A run that hangs must fail, say where it stood and leave no processes or namespaces
// behind. A whole run takes about a minute.
const HARD_LIMIT_MS = Number(process.env.TEST_CLUSTER_LIMIT_MS ?? 300_000);
let stage = 'starting';
/** Ends the run at once, failed: every machine's process, the namespaces and the folders go. */
function abandon(): never {
  for (const c of children) c.kill('SIGKILL');
  net.down();
  fs.rmSync(base, { recursive: true, force: true });
  process.exit(1);
}
const hardLimit = setTimeout(() => {
  process.stderr.write(`test:cluster: gave up after ${HARD_LIMIT_MS / 1000} s; it stood at: ${stage}\n`);
  process.stdout.write(`${JSON.stringify({ test: 'cluster', held: false, error: `no result within ${HARD_LIMIT_MS / 1000} s (at: ${stage})` }, null, 2)}\n`);
  abandon();
}, HARD_LIMIT_MS);
hardLimit.unref();
// Stopped from outside (Ctrl-C, a test runner's kill): the machines and namespaces go too.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, abandon);
const report: Record<string, unknown> = { test: 'cluster', hosts: HOSTS.length, agents: AGENTS.length, requests: REQUESTS, replicas: 3 };
let failed = false;
net.up();
try {
  log('three nats-servers, one per namespace');
  await Promise.all(HOSTS.map((h) => startNats(h)));
  await new Promise((r) => setTimeout(r, 1_500)); // routes between them, a meta leader
  log('three supervisors, h3 first: it takes the six leases, so its death moves them all');
  for (const h of [...HOSTS].reverse()) await startSupervisor(h);
  // The checker talks to h1's server: h1 is never killed or cut off.
  const t = await createJetStreamTransport({ servers: [servers.split(',')[0]!], prefix });
  const replies = new Map<string, number>();
  const countReplies = async () => {
    let entries;
    try {
      entries = await t.read('client', 0);
    } catch (err) {
      log(`reading the client's inbox: ${String(err)} (tried again)`);
      return replies.size;
    }
    replies.clear();
    // A repeated copy of a reply (same id, marked by the transport) is passed as the client would.
    for (const e of entries) if (!e.duplicate && e.message.in_reply_to) replies.set(e.message.in_reply_to, (replies.get(e.message.in_reply_to) ?? 0) + 1);
    return replies.size;
  };
  const requests: HiveMessage[] = [];
  const markers = new Map<string, string[]>(AGENTS.map((a) => [a, []]));
  const clientRoot = path.join(base, 'root-h1');
  const events: { at: number; what: string }[] = [];
  const t0 = Date.now();
  const note = (what: string) => (events.push({ at: Date.now() - t0, what }), log(what));
  let killedAt = 0;
  let backAt = 0;
  const leaseLines = (h: string) => {
    const file = path.join(base, `root-${h}`, 'log.jsonl');
    return (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : []).flatMap((l) => {
      if (!l.includes('"cluster.lease-')) return [];
      try {
        return [JSON.parse(l) as { at: string; type: string; agent: string }];
      } catch {
        return [];
      }
    });
  };
  const acquired = (h: string, from: number, to: number) => new Set(leaseLines(h).filter((l) => l.type === 'cluster.lease-acquired' && Date.parse(l.at) >= from && Date.parse(l.at) <= to).map((l) => l.agent));
  /** The agents h1 and h2 took over since `from` (from their event logs). */
  const takenOverSince = (from: number) => new Set([...acquired('h1', from, Date.now()), ...acquired('h2', from, Date.now())]);
  let takeoverMs: number | null = null;
  for (let i = 0; i < REQUESTS; i += 20) {
    const batch = Array.from({ length: 20 }, (_, k) => createMessage({ from: 'client', to: AGENTS[(i + k) % AGENTS.length]!, act: 'request', body: `req ${i + k}` }));
    await writeOutboxAsync(clientRoot, batch); // h1's ingress: acknowledged once this returns
    requests.push(...batch);
    if ((i / 20) % 5 === 0) {
      // A memory through the cluster (h1 is never hit); one refused while it cannot answer is not in the ledger.
      const agent = AGENTS[(i / 20) % AGENTS.length]!;
      const marker = `cluster-memory-${i}`;
      await remember(clientRoot, agent, `Test note\n${marker}`).then(() => markers.get(agent)!.push(marker), (err) => log(`memory write refused: ${String(err)}`));
    }
    if (i === Math.floor(REQUESTS / 3 / 20) * 20) {
      note('SIGKILL of h3: its supervisor and its nats-server');
      killedAt = Date.now();
      await Promise.all([kill(supervisors.get('h3')), kill(nats.get('h3'))]);
      // h3 comes back only once the survivors took every agent over (its leases run out
      // after 2 s; with R3 streams the cluster first elects new leaders for what h3 led,
      // seconds more on a busy machine), or after 30 s: then the failover did not happen,
      // which the invariants below report.
      const until = Date.now() + 30_000;
      for (;;) {
        if (takenOverSince(killedAt).size === AGENTS.length) {
          takeoverMs = Date.now() - killedAt;
          break;
        }
        if (Date.now() > until) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      note(takeoverMs === null ? 'h3\'s agents not all taken over within 30 s' : `h3's agents taken over by the survivors within ${takeoverMs} ms`);
    }
    if (i === Math.floor(REQUESTS / 2 / 20) * 20) {
      note('h3 comes back: nats-server, then its supervisor');
      backAt = Date.now();
      await startNats('h3');
      await startSupervisor('h3');
    }
    if (i === Math.floor((2 * REQUESTS) / 3 / 20) * 20) {
      note('h2 cut off (link down) for 8 s');
      net.cut('h2');
      await new Promise((r) => setTimeout(r, 8_000)); // load goes on being handled meanwhile
      net.heal('h2');
      note('h2 healed (link up)');
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  note(`all ${REQUESTS} requests sent`);
  const deadline = Date.now() + 120_000;
  while ((await countReplies()) < REQUESTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
  await new Promise((r) => setTimeout(r, 3_000)); // a duplicate would show up by now
  await countReplies();
  const lost = requests.filter((r) => !replies.has(r.id)).length;
  const duplicated = requests.filter((r) => (replies.get(r.id) ?? 0) > 1).length;
  const agents: Record<string, { sent: number; handled: number; echoed: number }> = {};
  for (const a of AGENTS) {
    const link = t.agent(a);
    const at = await link.restore();
    link.close();
    agents[a] = { sent: requests.filter((r) => r.to === a).length, handled: at.context.handled, echoed: (at.context.brainState as { echoed?: number } | null)?.echoed ?? 0 };
  }
  const statesMatch = Object.values(agents).every((x) => x.handled === x.sent && x.echoed === x.sent);
  const leases = HOSTS.map((h) => {
    const lines = leaseLines(h);
    return { host: h, acquired: lines.filter((l) => l.type === 'cluster.lease-acquired').length, lost: lines.filter((l) => l.type === 'cluster.lease-lost').length };
  });
  // The failover itself, not only its outcome: h3 held every agent's lease before its kill,
  // and the survivors took every one of them over before h3 came back (else a returning h3
  // could have answered the backlog alone and the counts above would still hold).
  const heldByH3 = acquired('h3', 0, killedAt);
  const takenOver = new Set([...acquired('h1', killedAt, backAt), ...acquired('h2', killedAt, backAt)]);
  const failover = { h3HeldBeforeKill: heldByH3.size, takenOverBeforeReturn: AGENTS.filter((a) => takenOver.has(a)).length, takeoverMs, held: AGENTS.every((a) => heldByH3.has(a) && takenOver.has(a)) };
  const memory = await checkMemoryMirrors(t.files, HOSTS.map((h) => path.join(base, `root-${h}`)), markers);
  t.close();
  Object.assign(report, { answered: replies.size, lost, duplicated, agents, statesMatch, memory, failover, leases, events, elapsedMs: Date.now() - t0 });
  failed = lost > 0 || duplicated > 0 || !statesMatch || !memory.held || !failover.held;
} catch (err) {
  failed = true;
  report.error = String((err as Error).stack ?? err);
} finally {
  for (const p of supervisors.values()) if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await Promise.race([Promise.all([...supervisors.values()].map((p) => p.exited)), new Promise((r) => setTimeout(r, 15_000))]);
  for (const c of children) c.kill('SIGKILL');
  net.down();
  // A failed run keeps every machine's folder (log.jsonl says who ran what, when).
  if (failed) report.folders = base;
  else fs.rmSync(base, { recursive: true, force: true });
}
report.held = !failed;
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
process.exit(failed ? 1 : 0);
