// npm run bench:hive — end-to-end figures of a running hive, printed as JSON.
//  - delivery latency: outbox write durable → recipient actor has handled it (committed)
//  - request/reply pairs per second at saturation (8 echo agents)
//  - worker spawn time, RSS per agent, cold start to ready with 100 agents
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHive, type Hive } from '../src/hive.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { spawn as spawnProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { rawDurableWriteRate } from './bench/disk.ts';
import { median, round, summarize } from './bench/stats.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const SATURATION = Number(process.env.BENCH_REQUESTS ?? 4_000);
const SATURATION_ROUNDS = Math.max(1, Number(process.env.BENCH_SATURATION_ROUNDS ?? 3));
const COLD_AGENTS = Number(process.env.BENCH_COLD_AGENTS ?? 100);
const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-'));

function config(root: string, agents: number) {
  return {
    root,
    agents: [
      ...Array.from({ length: agents }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' as const } })),
      { id: 'client', brain: { kind: 'external' as const } },
    ],
  };
}

async function latency(hive: Hive): Promise<{ handledMs: number[]; roundTripMs: number[] }> {
  const handledMs: number[] = [];
  const roundTripMs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const to = `echo-${i % 8}`;
    const m = createMessage({ from: 'client', to, act: 'request', body: `sample ${i}` });
    let t0 = 0;
    const handled = new Promise<number>((resolve) => {
      const off = hive.on('processed', (e) => {
        if (e.agent === to && e.handled.some((h) => h.id === m.id)) {
          off();
          resolve(performance.now());
        }
      });
    });
    const replied = new Promise<number>((resolve) => {
      const off = hive.on('delivered', (d) => {
        if (d.agent === 'client' && d.in_reply_to === m.id) {
          off();
          resolve(performance.now());
        }
      });
    });
    writeOutbox(hive.root, [m]);
    t0 = performance.now();
    hive.supervisor.kickRouter(['client']); // as hive.send does: the router looks at this outbox
    handledMs.push((await handled) - t0);
    roundTripMs.push((await replied) - t0);
    await new Promise((r) => setTimeout(r, 2)); // light load: one request in flight
  }
  return { handledMs, roundTripMs };
}

/**
 * Saturation: a client process writes requests as fast as it can (durable group commits
 * of 50); count replies. The clock starts when the client is loaded and about to write.
 */
async function saturation(hive: Hive, requests: number): Promise<{ pairsPerSecond: number; clientSendMs: number; elapsedMs: number }> {
  let replies = 0;
  const done = new Promise<void>((resolve) => {
    const off = hive.on('delivered', (d) => {
      if (d.agent === 'client' && ++replies === requests) {
        off();
        resolve();
      }
    });
  });
  const child = spawnProcess(process.execPath, ['--import', 'tsx', path.join(HERE, 'bench', 'client.ts'), hive.root, String(requests), '8', '50'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let t0 = 0;
  let sentAt = 0;
  const ready = new Promise<void>((resolve) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (t0 === 0 && out.includes('ready')) {
        t0 = performance.now();
        resolve();
      }
      if (sentAt === 0 && out.includes('sent')) sentAt = performance.now();
    });
  });
  await ready;
  await done;
  const elapsed = performance.now() - t0;
  await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
  return { pairsPerSecond: (requests / elapsed) * 1000, clientSendMs: sentAt - t0, elapsedMs: elapsed };
}

async function spawnTimes(hive: Hive, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await hive.spawn({ id: `spawned-${i}`, brain: { kind: 'echo' } });
    times.push(performance.now() - t0);
  }
  return times;
}

const disk = rawDurableWriteRate(path.join(base, 'raw'), 300);

// 8 echo agents: latency and saturation
const small = createHive(config(path.join(base, 'small'), 8));
await small.start();
await latency(small); // warm up (page cache, the first turns of each agent)
const fresh = await latency(small);
// The headline figures are a running hive's: every agent is a V8 isolate of its own that
// JIT-compiles its turn code only after running it for a while. The first 1,000 requests
// of a fresh hive ran at ~500 pairs/s, the rounds after them at 830-1,100 /s; delivery
// latency of a hive that has done that work is ~1.5-2 ms lower than right after start.
// So: a warm-up round as large as a measured one, the median of SATURATION_ROUNDS
// saturation rounds, then latency again. The fresh-hive figures and the warm-up round are printed beside them.
const warmUp = await saturation(small, SATURATION);
const rounds: Awaited<ReturnType<typeof saturation>>[] = [];
for (let i = 0; i < SATURATION_ROUNDS; i++) rounds.push(await saturation(small, SATURATION));
const pairsPerSecond = rounds.map((r) => r.pairsPerSecond);
const sat = rounds.find((r) => r.pairsPerSecond === median(pairsPerSecond)) ?? rounds[0]!;
const lat = await latency(small);
const spawn = await spawnTimes(small, 5);
await small.close();

// cold start of 100 agents, RSS per agent
if (global.gc) global.gc();
const rssBefore = process.memoryUsage().rss;
const big = createHive(config(path.join(base, 'big'), COLD_AGENTS));
const t0 = performance.now();
await big.start();
const coldStartMs = performance.now() - t0;
await new Promise((r) => setTimeout(r, 500));
const rssAfter = process.memoryUsage().rss;
await big.close();

const handled = summarize(lat.handledMs);
const result = {
  benchmark: 'hive',
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, totalMemGiB: round(os.totalmem() / 2 ** 30, 1) },
  rawDurableWrite: { perSecond: round(disk.perSecond, 0), p50Ms: summarize(disk.latenciesMs).p50 },
  deliveryLatencyMs: { ...handled, what: 'outbox write durable → recipient actor committed the turn (8 echo agents, one request in flight, after the saturation rounds)' },
  roundTripMs: { ...summarize(lat.roundTripMs), what: 'request durable → reply delivered into the sender inbox' },
  freshHive: {
    what: 'the same two figures right after start (after 300 warm-up samples, before any load)',
    deliveryLatencyMs: summarize(fresh.handledMs),
    roundTripMs: summarize(fresh.roundTripMs),
  },
  requestReplyPairsPerSecond: {
    median: round(median(pairsPerSecond), 0),
    rounds: pairsPerSecond.map((r) => round(r, 0)),
    warmUpRound: { requests: SATURATION, perSecond: round(warmUp.pairsPerSecond, 0) },
    requests: SATURATION,
    ratioToRawDurableWrite: round(median(pairsPerSecond) / disk.perSecond, 2),
    // When the last reply lands right after the client's last write, the client (the disk's
    // flush rate for new files) set the pace, not the hive.
    clientSendMs: round(sat.clientSendMs, 0),
    lastReplyMs: round(sat.elapsedMs, 0),
  },
  workerSpawnMs: summarize(spawn),
  coldStart: { agents: COLD_AGENTS, readyMs: round(coldStartMs, 0) },
  rssPerAgentMB: round((rssAfter - rssBefore) / COLD_AGENTS / 2 ** 20, 1),
  targets: {
    p50AtMost5ms: handled.p50 <= 5,
    p99AtMost25ms: handled.p99 <= 25,
    atLeast1000PairsPerSecond: median(pairsPerSecond) >= 1_000,
    hundredAgentsReadyIn10s: coldStartMs <= 10_000,
    atMost30MBPerAgent: (rssAfter - rssBefore) / COLD_AGENTS / 2 ** 20 <= 30,
  },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
fs.rmSync(base, { recursive: true, force: true });
