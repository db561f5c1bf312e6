// npm run bench:ab -- [REF] [--pooled N] — this checkout's Hive against another commit's (REF,
// default HEAD), in one process, interleaved: the bench:peers workload (8 echo agents, one
// client, backlogs and round trips with one request in flight) on two hives side by side.
// The disk's speed drifts 30–50 % within minutes, so a change is only judged against a
// baseline measured in the same run. REF is checked out once into a git worktree under the
// system's temp folder (node_modules linked from this checkout). Prints JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, round, summarize } from './bench/stats.ts';
import type { Peer } from './bench/peers/peer.ts';
import { cpuMs, peerWorkload } from './bench/peers/workload.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : undefined;
};
const pooled = Number(flag('--pooled') ?? 1);
const ref = args[0] ?? 'HEAD';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const WARM = Number(process.env.BENCH_WARM ?? 8);
const WARM_RTT = Number(process.env.BENCH_WARM_RTT ?? 1_600);
const AGENTS = Array.from({ length: 8 }, (_, i) => `echo-${i}`);

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const git = (...a: string[]) => execFileSync('git', ['-C', here, ...a], { encoding: 'utf8' }).trim();
const sha = git('rev-parse', ref);
const baseTree = path.join(os.tmpdir(), `hive-ab-${sha.slice(0, 12)}`);
if (!fs.existsSync(baseTree)) {
  git('worktree', 'add', '--detach', baseTree, sha);
  fs.symlinkSync(path.join(here, 'node_modules'), path.join(baseTree, 'node_modules'));
}
const progress = (what: string) => process.stderr.write(`bench:ab: ${what}\n`);

type StartPeer = (root: string, agents: string[], perWorker?: number, name?: string) => Promise<Peer>;
const load = async (tree: string): Promise<StartPeer> =>
  ((await import(pathToFileURL(path.join(tree, 'scripts/bench/peers/hive.ts')).href)) as { startHivePeer: StartPeer }).startHivePeer;

const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-ab-'));
const peers = [
  await (await load(baseTree)).call(null, path.join(base, 'base'), AGENTS, pooled, `base ${sha.slice(0, 8)}`),
  await (await load(here)).call(null, path.join(base, 'this'), AGENTS, pooled, 'this checkout'),
];
const { sent, backlog, roundTrip } = peerWorkload(AGENTS, progress);

// A fixed warm-up (the same for both): every isolate's JIT settles over several backlogs,
// and the one-in-flight path over its own round trips (its CPU per round trip falls by half
// over the first ~1,500: each agent's isolate sees an eighth of them).
for (let i = 0; i < WARM; i++) for (const p of peers) await backlog(p, REQUESTS, `warm${i}`);
for (let i = 0; i < WARM_RTT; i++) {
  for (const p of peers) {
    await roundTrip(p, `warm-rtt-${i}`);
    await new Promise((done) => setTimeout(done, 2));
  }
}
const results = new Map(peers.map((p) => [p.name, { pairs: [] as number[], cpu: [] as number[], rtt: [] as number[], rttCpu: [] as number[] }]));
for (let r = 0; r < ROUNDS; r++) {
  for (const p of r % 2 === 0 ? peers : [...peers].reverse()) {
    const res = results.get(p.name)!;
    const b = await backlog(p, REQUESTS, `r${r}`);
    res.pairs.push(b.pairsPerSecond);
    res.cpu.push(b.cpuMsPerPair);
    const cpu0 = cpuMs([]);
    for (let i = 0; i < SAMPLES; i++) {
      res.rtt.push(await roundTrip(p, `r${r}-rtt-${i}`));
      await new Promise((done) => setTimeout(done, 2));
    }
    res.rttCpu.push((cpuMs([]) - cpu0) / SAMPLES);
  }
}
await new Promise((done) => setTimeout(done, 200));
const checks = Object.fromEntries(await Promise.all(peers.map(async (p) => [p.name, await p.check(sent[p.name] ?? [])] as const)));
for (const p of peers) await p.close();
fs.rmSync(base, { recursive: true, force: true });

const out = {
  benchmark: 'ab',
  workload: { agents: AGENTS.length, agentsPerWorker: pooled, backlogRequests: REQUESTS, roundTripSamplesPerRound: SAMPLES, rounds: ROUNDS, warmUpBacklogs: WARM, warmUpRoundTrips: WARM_RTT },
  systems: Object.fromEntries(
    [...results].map(([name, r]) => [
      name,
      {
        pairsPerSecond: { median: round(median(r.pairs), 0), rounds: r.pairs.map((x) => round(x, 0)) },
        cpuMsPerPairAtSaturation: { median: round(median(r.cpu), 3), rounds: r.cpu.map((x) => round(x, 3)) },
        roundTripMs: summarize(r.rtt),
        // The whole process's CPU (both hives: the other one idles meanwhile) per round trip.
        cpuMsPerRoundTrip: { median: round(median(r.rttCpu), 2), rounds: r.rttCpu.map((x) => round(x, 2)) },
        exactlyOnce: checks[name],
      },
    ]),
  ),
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
if (!Object.values(checks).every((c) => c.exactlyOnce)) process.exitCode = 1;
