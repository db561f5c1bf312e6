// npm run bench:scale — recovery after a supervisor SIGKILL with 100 agents, and a hive of
// 1,000 agents (start time, total RSS), both with pooled hosts. Prints JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChaosChild } from '../src/chaos/child.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { median, round } from './bench/stats.ts';

const RECOVERY_AGENTS = Number(process.env.BENCH_RECOVERY_AGENTS ?? 100);
const BIG_AGENTS = Number(process.env.BENCH_BIG_AGENTS ?? 1_000);
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

/** Sends one request to the last agent and waits for its reply: routing works end to end. */
async function roundTrip(root: string, to: string): Promise<number> {
  const m = createMessage({ from: 'client', to, act: 'request', body: 'are you back?' });
  const before = listInbox(root, 'client').length;
  const t0 = Date.now();
  writeOutbox(root, [m]);
  while (listInbox(root, 'client').length <= before) {
    if (Date.now() - t0 > 30_000) throw new Error('no reply within 30 s');
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - t0;
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

// 1,000 agents.
const big = writeConfig('big', BIG_AGENTS, Math.max(PER_WORKER, Math.ceil(BIG_AGENTS / 20)));
await ensureHive(big.root);
await ensureAgent(big.root, { id: 'client', brain: { kind: 'external' } });
const bigChild = new ChaosChild(big.file);
const startMs = await bigChild.start(undefined, 300_000);
const rtt = await roundTrip(big.root, `echo-${BIG_AGENTS - 1}`);
await new Promise((r) => setTimeout(r, 1_000));
const rss = rssMiB(bigChild.pid!);
await bigChild.stop(120_000);

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
  thousandAgents: {
    agents: BIG_AGENTS,
    agentsPerWorker: Math.max(PER_WORKER, Math.ceil(BIG_AGENTS / 20)),
    startToReadyMs: startMs,
    roundTripMs: rtt,
    totalRssMiB: round(rss, 0),
    targetRssAtMost3GiB: rss <= 3 * 1024,
  },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
fs.rmSync(base, { recursive: true, force: true });
