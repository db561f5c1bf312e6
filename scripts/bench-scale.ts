// npm run bench:scale — recovery after a supervisor SIGKILL with 100 agents, and a hive of
// 10,000 pooled agents (100 per worker): start → ready (with the start's phases), every
// request answered over a minute after ready (one at a time, to random agents, while the
// hive's background work after start runs), peak RSS; against the targets of
// docs/architecture.md ("Idle agents cost nothing"). Prints JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChaosChild } from '../src/chaos/child.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { InboxReader, lastInboxSeq } from '../src/queue/inbox.ts';
import { median, round, summarize } from './bench/stats.ts';

const RECOVERY_AGENTS = Number(process.env.BENCH_RECOVERY_AGENTS ?? 100);
const BIG_AGENTS = Number(process.env.BENCH_BIG_AGENTS ?? 10_000);
const BIG_PER_WORKER = Number(process.env.BENCH_BIG_AGENTS_PER_WORKER ?? 100);
const AFTER_READY_MS = Number(process.env.BENCH_AFTER_READY_MS ?? 60_000);
const PER_WORKER = Number(process.env.BENCH_AGENTS_PER_WORKER ?? 25);
const KILLS = Number(process.env.BENCH_KILLS ?? 3);
const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-scale-'));

function writeConfig(name: string, agents: number, perWorker: number): { file: string; root: string } {
  const root = path.join(base, name);
  const file = path.join(base, `${name}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      root,
      agents: [...Array.from({ length: agents }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' } })), { id: 'client', brain: { kind: 'external' } }],
      supervisor: { agentsPerWorker: perWorker },
      memory: { enabled: false },
    }),
  );
  return { file, root };
}

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** The client's inbox, read on from where the last reply was (a cheap `.synced` check per look). */
class Replies {
  private readonly reader: InboxReader;
  private seq: number;
  constructor(root: string) {
    this.reader = new InboxReader(root, 'client');
    this.seq = lastInboxSeq(root, 'client');
  }
  /** Waits for the reply to `id` (ms since `t0`). */
  async waitFor(id: string, t0: number): Promise<number> {
    for (;;) {
      for (const e of this.reader.read(this.seq).entries) {
        this.seq = e.seq;
        if (e.message.in_reply_to === id) return performance.now() - t0;
      }
      if (performance.now() - t0 > 60_000) throw new Error(`no reply to ${id} within 60 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

/**
 * How long each request's own durable write took (the client's `writeOutbox`: write, fsync,
 * rename, directory fsync), beside its latency: a request's latency counts it, and on a
 * virtual disk a flush now and then takes 20–35 ms, whoever makes it.
 */
const clientWrites: number[] = [];

/** Sends one request (an outbox file, as any program would) and waits for its reply. */
async function roundTrip(root: string, to: string, replies = new Replies(root)): Promise<number> {
  const m = createMessage({ from: 'client', to, act: 'request', body: 'are you back?' });
  const t0 = performance.now();
  writeOutbox(root, [m]);
  clientWrites.push(performance.now() - t0);
  return replies.waitFor(m.id, t0);
}

/** The phases of the last start, from its `hive.started` line in log.jsonl. */
function startPhases(root: string): Record<string, number> {
  const lines = fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"hive.started"'));
  return lines.length > 0 ? (JSON.parse(lines.at(-1)!).phases_ms as Record<string, number>) : {};
}

// Recovery: SIGKILL the supervisor under light traffic, start it again.
const rec = writeConfig('recovery', RECOVERY_AGENTS, PER_WORKER);
await ensureHive(rec.root);
await ensureAgent(rec.root, { id: 'client', brain: { kind: 'external' } });
const child = new ChaosChild(rec.file);
await child.start(undefined, 120_000);
const recoveries: number[] = [];
const firstReplies: number[] = [];
for (let k = 0; k < KILLS; k++) {
  for (let i = 0; i < 50; i++) writeOutbox(rec.root, [createMessage({ from: 'client', to: `echo-${i % RECOVERY_AGENTS}`, act: 'request', body: `load ${k}.${i}` })]);
  const t0 = Date.now();
  await child.kill();
  await child.start(undefined, 120_000);
  recoveries.push(Date.now() - t0);
  firstReplies.push(await roundTrip(rec.root, `echo-${RECOVERY_AGENTS - 1}`));
}
await child.stop();

// 10,000 agents.
const big = writeConfig('big', BIG_AGENTS, BIG_PER_WORKER);
await ensureHive(big.root);
await ensureAgent(big.root, { id: 'client', brain: { kind: 'external' } });
const bigChild = new ChaosChild(big.file);
const startMs = await bigChild.start(undefined, 600_000);
const replies = new Replies(big.root);
const latencies: number[] = [];
/** When each request was sent (ms after ready), beside its latency: where the slow ones fall. */
const sentAfterReady: number[] = [];
const readyAt = performance.now();
let peakRss = rssMiB(bigChild.pid!);
clientWrites.length = 0;
const firstRequestMs = await roundTrip(big.root, `echo-${BIG_AGENTS - 1}`, replies);
const until = performance.now() + AFTER_READY_MS;
while (performance.now() < until) {
  sentAfterReady.push(performance.now() - readyAt);
  latencies.push(await roundTrip(big.root, `echo-${Math.floor(Math.random() * BIG_AGENTS)}`, replies));
  peakRss = Math.max(peakRss, rssMiB(bigChild.pid!));
  await new Promise((r) => setTimeout(r, 100));
}
const phases = startPhases(big.root);
await bigChild.stop(300_000);
const after = summarize([firstRequestMs, ...latencies]);

const result = {
  benchmark: 'scale',
  machine: { cpus: os.cpus().length, totalMemGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version },
  recovery: {
    agents: RECOVERY_AGENTS,
    agentsPerWorker: PER_WORKER,
    kills: KILLS,
    killToReadyMs: { median: median(recoveries), samples: recoveries },
    firstReplyAfterReadyMs: { median: median(firstReplies), samples: firstReplies },
    what: 'SIGKILL of the supervisor process → a new one has every actor restored and routing (ready line)',
    targetAtMost2s: median(recoveries) <= 2_000,
  },
  bigHive: {
    agents: BIG_AGENTS,
    agentsPerWorker: BIG_PER_WORKER,
    startToReadyMs: startMs,
    startPhasesMs: phases,
    firstRequestAfterReadyMs: round(firstRequestMs, 1),
    requestsAfterReadyMs: { ...after, overMs: AFTER_READY_MS, over50ms: [firstRequestMs, ...latencies].filter((l) => l > 50).length },
    // Part of each request's latency: the client's own durable write of its request file.
    clientWriteMs: { ...summarize(clientWrites), over20ms: clientWrites.filter((w) => w > 20).length },
    // The ten slowest, each with when it was sent (ms after ready).
    slowest: [{ sentAfterReadyMs: 0, ms: firstRequestMs }, ...latencies.map((ms, i) => ({ sentAfterReadyMs: sentAfterReady[i]!, ms }))]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10)
      .map((r) => ({ sentAfterReadyMs: round(r.sentAfterReadyMs, 0), ms: round(r.ms, 1) })),
    peakRssMiB: round(peakRss, 0),
    targets: {
      readyAtMost20s: startMs <= 20_000,
      everyRequestAtMost50ms: after.max <= 50,
      rssAtMost3GiB: peakRss <= 3 * 1024,
    },
  },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
// BENCH_KEEP=1 keeps the hives (to look at them, or to run again at once: on a disk whose
// allocator skips recently freed inodes, a run right after a large removal starts slower).
if (process.env.BENCH_KEEP) process.stderr.write(`bench:scale: hives kept in ${base}\n`);
else fs.rmSync(base, { recursive: true, force: true });
