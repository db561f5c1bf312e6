// npm run bench:cluster — one hive over two machines on NATS JetStream beside the same
// workload on one machine's filesystem transport, in one run, interleaved. Workload: 8 echo
// agents and one client; on the cluster echo-0..3 and the client run on h1 and echo-4..7 on
// h2 (two supervisors on loopback, one nats-server), so half of the requests and replies
// cross machines. Each round, for each system in turn: a backlog of BENCH_REQUESTS requests
// sent at once (pairs/s, CPU ms per pair of every process involved), then BENCH_SAMPLES
// round trips with one request in flight (cross-machine ones reported apart). Then the
// failover time: the machine holding an agent's lease is SIGKILLed and a probe request is
// sent every 50 ms until one is answered. Every system is checked for exactly-once. Also
// what the cluster's round trips ask of NATS (API requests, KV updates, stream publishes per
// round trip), counted on the wire by a subscriber in a phase of its own (one more
// subscriber for the server to feed: it stays out of the timed rounds), and what the
// cluster costs idle (each machine's and the nats-server's CPU per second while nothing is
// sent). JSON out.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { median, round, settled, summarize } from './bench/stats.ts';
import { checkCounts, type Peer, type PeerCheck } from './bench/peers/peer.ts';
import { cpuMs, peerWorkload, processCpuMs } from './bench/peers/workload.ts';
import { startHivePeer } from './bench/peers/hive.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { writeOutboxAsync } from '../src/queue/outbox.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { natsUnavailable, startNatsServer, type NatsServer } from '../test/helpers/nats-server.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(REPO, 'test', 'fixtures', 'cluster-host.ts');
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const IDLE_SETTLE_MS = Number(process.env.BENCH_IDLE_SETTLE_MS ?? 15_000);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const AGENTS = Array.from({ length: 8 }, (_, i) => `echo-${i}`);
const REMOTE = new Set(AGENTS.slice(4)); // on h2, the client on h1
const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-cluster-'));
const progress = (what: string) => process.stderr.write(`bench:cluster: ${what}\n`);

const missing = natsUnavailable();
if (missing) {
  process.stdout.write(`${JSON.stringify({ benchmark: 'cluster', skipped: missing }, null, 2)}\n`);
  process.exit(0);
}

interface Machine {
  child: ChildProcess;
  exited: Promise<void>;
}

function startMachine(root: string, url: string, prefix: string, host: string, mode: string): Promise<Machine> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, root, url, prefix, host, mode], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + String(d)).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready ') && resolve({ child, exited }));
    void exited.then(() => reject(new Error(`${host} exited before ready: ${err}`)));
  });
}

/**
 * The cluster as a peer: requests sent over NATS as the client (a JetStream publish each,
 * acknowledged once stored; h1 routes them, the client runs there), replies seen on the
 * client's inbox subject.
 */
async function startClusterPeer(server: NatsServer): Promise<Peer & { machines: Machine[]; prefix: string }> {
  const prefix = `bench${process.pid}`;
  const [r1, r2] = [path.join(base, 'h1'), path.join(base, 'h2')];
  const machines = [await startMachine(r1, server.url, prefix, 'h1', 'bench'), await startMachine(r2, server.url, prefix, 'h2', 'bench')];
  const nc = await connect({ servers: [server.url] });
  const sender = await createJetStreamTransport({ servers: [server.url], prefix });
  const listeners = new Set<(ids: string[]) => void>();
  nc.subscribe(`${prefix}.inbox.client`, {
    callback: (_e, m) => {
      const reply = m.json<HiveMessage>().in_reply_to;
      if (reply) for (const l of listeners) l([reply]);
    },
  });
  return {
    name: 'cluster',
    machines,
    prefix,
    serverPids: [...machines.map((m) => m.child.pid!), server.process.pid!],
    async send(requests) {
      await sender.send(requests.map((r) => createMessage({ id: r.id, from: 'client', to: r.to, act: 'request', body: r.body })));
    },
    onReplies(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async check(requestIds): Promise<PeerCheck> {
      const t = await createJetStreamTransport({ servers: [server.url], prefix });
      const counts = new Map<string, number>();
      for (const e of await t.read('client', 0)) if (e.message.in_reply_to) counts.set(e.message.in_reply_to, (counts.get(e.message.in_reply_to) ?? 0) + 1);
      let handled = 0;
      for (const a of AGENTS) {
        const link = t.agent(a);
        handled += (await link.restore()).context.handled;
        link.close();
      }
      t.close();
      return checkCounts(requestIds, counts, handled);
    },
    async close() {
      sender.close();
      await nc.close();
      for (const m of machines) m.child.kill('SIGTERM');
      await Promise.all(machines.map((m) => m.exited));
    },
  };
}

const { sent, backlog, roundTrip } = peerWorkload(AGENTS, progress);

/** `n` round trips with one request in flight, alternating the agents; and their CPU per round trip (every process involved). */
async function roundTrips(peer: Peer, n: number, tag: string): Promise<{ local: number[]; remote: number[]; cpuMs: number }> {
  const out = { local: [] as number[], remote: [] as number[], cpuMs: 0 };
  progress(`${peer.name}: ${n} round trips ${tag}`);
  const cpu0 = cpuMs(peer.serverPids ?? []);
  for (let i = 0; i < n; i++) {
    const to = AGENTS[i % AGENTS.length]!;
    (REMOTE.has(to) ? out.remote : out.local).push(await roundTrip(peer, `${tag}-${i}`, to));
    await new Promise((res) => setTimeout(res, 2));
  }
  out.cpuMs = (cpuMs(peer.serverPids ?? []) - cpu0) / n;
  return out;
}


/** The lease holder of echo-x SIGKILLed: ms until a probe sent every 50 ms is answered. */
async function failover(server: NatsServer): Promise<{ ms: number; answeredOnce: boolean }> {
  const prefix = `fail${process.pid}`;
  const [r1, r2] = [path.join(base, 'f1'), path.join(base, 'f2')];
  const h1 = await startMachine(r1, server.url, prefix, 'h1', 'leased'); // takes echo-x's lease
  const h2 = await startMachine(r2, server.url, prefix, 'h2', 'leased'); // the client runs here
  const nc = await connect({ servers: [server.url] });
  const answered = new Map<string, number>();
  nc.subscribe(`${prefix}.inbox.client`, { callback: (_e, m) => {
    const id = m.json<HiveMessage>().in_reply_to;
    if (id) answered.set(id, (answered.get(id) ?? 0) + 1);
  } });
  const probes: string[] = [];
  const probe = async () => {
    const m = createMessage({ from: 'client', to: 'echo-x', act: 'request', body: 'probe' });
    probes.push(m.id);
    await writeOutboxAsync(r2, [m]);
    return m.id;
  };
  const first = await probe();
  while (!answered.has(first)) await new Promise((r) => setTimeout(r, 20));
  progress('failover: SIGKILL of the lease holder');
  const killedAt = performance.now();
  h1.child.kill('SIGKILL');
  let ms = -1;
  for (;;) {
    const id = await probe();
    const until = performance.now() + 50;
    while (performance.now() < until && !answered.has(id)) await new Promise((r) => setTimeout(r, 5));
    if (answered.has(id)) {
      ms = performance.now() - killedAt;
      break;
    }
    if (performance.now() - killedAt > 60_000) break;
  }
  await new Promise((r) => setTimeout(r, 3_000)); // the probes sent meanwhile are answered too
  const answeredOnce = probes.every((id) => answered.get(id) === 1);
  await nc.close();
  h2.child.kill('SIGTERM');
  await Promise.all([h1.exited, h2.exited]);
  return { ms, answeredOnce };
}

/**
 * What the cluster asks of its NATS server, counted on the wire by a tap (a subscriber to
 * the subjects): JetStream API requests (reads, stream infos), KV updates (routed marks,
 * files), publishes to the hive's streams (inbox entries, commit records, sends).
 */
async function tapServer(server: NatsServer, prefix: string): Promise<{ counts: () => { api: number; kv: number; hive: number }; close: () => Promise<void> }> {
  const nc = await connect({ servers: [server.url] });
  const counts = { api: 0, kv: 0, hive: 0 };
  nc.subscribe('$JS.API.>', { callback: () => void counts.api++ });
  nc.subscribe('$KV.>', { callback: () => void counts.kv++ });
  nc.subscribe(`${prefix}.>`, { callback: () => void counts.hive++ });
  await nc.flush();
  return { counts: () => ({ ...counts }), close: () => nc.close() };
}

const server = await startNatsServer({ storeDir: path.join(base, 'nats') });
const peers: Peer[] = [await startHivePeer(path.join(base, 'fs'), AGENTS), await startClusterPeer(server)];
// Warm-up: a backlog, then round trips in chunks of 200 until their CPU per round trip
// settles (the last three within 10 %, at least WARM_RTT_MIN chunks, at most 15): every
// isolate's JIT warms the one-in-flight path apart from the backlogs'. The cluster's CPU per
// round trip fell from 12.6 to 8.5 ms over its first 2,000 round trips, flat enough on the
// way for three chunks in a row to look settled at 12.5 (two runs stopped there, and their
// timed round trips then cost 12 ms of CPU each, the cross-machine p50 5.0 ms against 3.9).
const WARM_RTT_MIN = Number(process.env.BENCH_WARM_RTT_MIN ?? 10);
/** Each warm-up chunk's CPU per round trip and p50 (a cluster that just started is slower: this shows by how much), and whether it settled within 15. */
const warmUpRtt: Record<string, { cpuMs: number[]; p50Ms: number[]; settled: boolean }> = {};
for (const p of peers) {
  await backlog(p, REQUESTS, 'warm');
  const w: { cpuMs: number[]; p50Ms: number[]; settled: boolean } = (warmUpRtt[p.name] = { cpuMs: [], p50Ms: [], settled: false });
  while (w.cpuMs.length < 15) {
    const t = await roundTrips(p, 200, `warm-rtt${w.cpuMs.length}`);
    w.cpuMs.push(t.cpuMs);
    w.p50Ms.push(median([...t.local, ...t.remote]));
    if (w.cpuMs.length >= WARM_RTT_MIN && settled(w.cpuMs)) {
      w.settled = true;
      break;
    }
  }
}
const results: Record<string, { pairs: number[]; cpu: number[]; local: number[]; remote: number[]; rttCpu: number[] }> = {};
for (let r = 0; r < ROUNDS; r++) {
  const order = peers.map((_, i) => peers[(i + r) % peers.length]!);
  for (const p of order) {
    const res = (results[p.name] ??= { pairs: [], cpu: [], local: [], remote: [], rttCpu: [] });
    const b = await backlog(p, REQUESTS, `r${r}`);
    res.pairs.push(b.pairsPerSecond);
    res.cpu.push(b.cpuMsPerPair);
    const t = await roundTrips(p, SAMPLES, `r${r}-rtt`);
    res.local.push(...t.local);
    res.remote.push(...t.remote);
    res.rttCpu.push(t.cpuMs);
  }
}
// What the cluster asks of NATS per round trip (idle agents' polls included), counted in a
// phase of its own: the tap is one more subscriber the server feeds every message to, and
// its process's CPU is the bench's, so it stays out of the timed rounds.
const clusterPeer = peers.find((p) => p.name === 'cluster') as Peer & { prefix: string };
const tap = await tapServer(server, clusterPeer.prefix);
await roundTrips(clusterPeer, SAMPLES, 'tapped');
const tapped = tap.counts();
await tap.close();
const checks: Record<string, PeerCheck> = {};
for (const p of peers) {
  await new Promise((res) => setTimeout(res, 300));
  checks[p.name] = await p.check(sent[p.name] ?? []);
}
// What the cluster costs while nothing is sent (every agent's and the router's polls, NATS
// pings, leases): CPU of each machine's process and of the nats-server, after a pause that
// lets the rounds' garbage collections and V8's post-load heap shrinking pass.
const cluster = peers.find((p) => p.name === 'cluster') as Peer & { machines: Machine[] };
await new Promise((res) => setTimeout(res, IDLE_SETTLE_MS));
const idlePids = [...cluster.machines.map((m) => m.child.pid!), server.process.pid!];
const idle0 = idlePids.map(processCpuMs);
await new Promise((res) => setTimeout(res, IDLE_MS));
const idleCpu = idlePids.map((pid, i) => round((processCpuMs(pid) - idle0[i]!) / (IDLE_MS / 1000), 1));
for (const p of peers) await p.close();
const fail = await failover(server);
await server.stop();

const systems = Object.fromEntries(
  Object.entries(results).map(([name, r]) => [
    name,
    {
      pairsPerSecond: { median: round(median(r.pairs), 0), rounds: r.pairs.map((x) => round(x, 0)) },
      cpuMsPerPair: { saturation: round(median(r.cpu), 3), oneInFlight: round(median(r.rttCpu), 2) },
      roundTripMs: name === 'cluster' ? { sameMachine: summarize(r.local), crossMachine: summarize(r.remote) } : { all: summarize([...r.local, ...r.remote]) },
      exactlyOnce: checks[name],
    },
  ]),
);
const result = {
  benchmark: 'cluster',
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version },
  setup: 'cluster: two supervisors on loopback (h1: client + echo-0..3, h2: echo-4..7), one nats-server (JetStream file store, R1); fs: one supervisor, 8 echo agents',
  workload: { agents: AGENTS.length, backlogRequests: REQUESTS, roundTripSamplesPerRound: SAMPLES, rounds: ROUNDS },
  systems,
  warmUp: Object.fromEntries(Object.entries(warmUpRtt).map(([name, w]) => [name, { cpuMsPerRoundTrip: w.cpuMs.map((x) => round(x, 2)), roundTripP50Ms: w.p50Ms.map((x) => round(x, 2)), settled: w.settled }])),
  natsPerRoundTrip: {
    jetStreamApiRequests: round(tapped.api / SAMPLES, 2),
    kvUpdates: round(tapped.kv / SAMPLES, 2),
    streamPublishes: round(tapped.hive / SAMPLES, 2),
  },
  idleCpuMsPerSecond: { h1: idleCpu[0], h2: idleCpu[1], natsServer: idleCpu[2], what: `each process's CPU while nothing is sent, ${IDLE_MS / 1000} s after a ${IDLE_SETTLE_MS / 1000} s pause (the machines poll every 500 ms)` },
  failover: { leaseMs: 2_000, killedToAnsweringMs: round(fail.ms, 0), everyProbeAnsweredOnce: fail.answeredOnce },
  targets: { crossMachineP50Ms: 5, pairsPerSecond: 500, failoverMs: 10_000 },
  allExactlyOnce: Object.values(checks).every((c) => c.exactlyOnce) && fail.answeredOnce,
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
fs.rmSync(base, { recursive: true, force: true });
if (!result.allExactlyOnce) process.exitCode = 1;
