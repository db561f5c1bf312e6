// npm run bench:queue — durable queue throughput against the disk's raw durable-write rate.
// Prints one JSON document. Figures are medians of several rounds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { rawDurableWriteRate } from './bench/disk.ts';
import { median, round, summarize } from './bench/stats.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PER_ROUND = Number(process.env.BENCH_MESSAGES ?? 400);

const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-queue-'));
const root = path.join(base, 'hive');
await ensureHive(root);
await ensureAgent(root, { id: 'sender' });
await ensureAgent(root, { id: 'receiver' });
// The router's side of delivery: one transport, the only writer of the receiver's inbox log.
const transport = createFsTransport(root);
const deliver = (_root: string, to: string, batch: HiveMessage[]) => transport.deliver(to, batch);

function messages(n: number): HiveMessage[] {
  return Array.from({ length: n }, (_, i) => createMessage({ from: 'sender', to: 'receiver', act: 'inform', body: `payload ${i} ${'x'.repeat(200)}` }));
}

const raw: number[] = [];
const rawLat: number[] = [];
const single: number[] = [];
const singleLat: number[] = [];
const outboxBatch: number[] = [];
const deliverSingle: number[] = [];
const deliverSingleLat: number[] = [];
const deliverBatch: number[] = [];

for (let r = 0; r < ROUNDS; r++) {
  const rr = rawDurableWriteRate(path.join(base, `raw-${r}`), PER_ROUND);
  raw.push(rr.perSecond);
  rawLat.push(...rr.latenciesMs);

  let msgs = messages(PER_ROUND);
  let t0 = performance.now();
  for (const m of msgs) {
    const s = performance.now();
    writeOutbox(root, [m]);
    singleLat.push(performance.now() - s);
  }
  single.push((PER_ROUND / (performance.now() - t0)) * 1000);

  msgs = messages(PER_ROUND);
  t0 = performance.now();
  for (let i = 0; i < msgs.length; i += 100) writeOutbox(root, msgs.slice(i, i + 100));
  outboxBatch.push((PER_ROUND / (performance.now() - t0)) * 1000);

  msgs = messages(PER_ROUND / 2);
  t0 = performance.now();
  for (const m of msgs) {
    const s = performance.now();
    await deliver(root, 'receiver', [m]);
    deliverSingleLat.push(performance.now() - s);
  }
  deliverSingle.push((msgs.length / (performance.now() - t0)) * 1000);

  msgs = messages(PER_ROUND);
  t0 = performance.now();
  for (let i = 0; i < msgs.length; i += 100) await deliver(root, 'receiver', msgs.slice(i, i + 100));
  deliverBatch.push((PER_ROUND / (performance.now() - t0)) * 1000);

  fs.rmSync(path.join(root, 'agents', 'sender', 'outbox'), { recursive: true, force: true });
}

const rawRate = median(raw);
const figure = (rates: number[], lat?: number[]) => {
  const rate = median(rates);
  return { messagesPerSecond: round(rate, 0), ratioToRaw: round(rate / rawRate, 2), ...(lat ? { latencyMs: summarize(lat) } : {}) };
};

const result = {
  benchmark: 'queue',
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, dir: base },
  rounds: ROUNDS,
  messagesPerRound: PER_ROUND,
  rawDurableWrite: { perSecond: round(rawRate, 0), latencyMs: summarize(rawLat), what: 'write + fsync + rename + directory fsync, one file' },
  outboxSingle: figure(single, singleLat),
  outboxBatch100: figure(outboxBatch),
  deliverSingle: figure(deliverSingle, deliverSingleLat),
  deliverBatch100: figure(deliverBatch),
  targets: {
    batchedDeliveryAtLeastRaw: median(deliverBatch) >= rawRate,
    singleWritesAtLeast70PercentOfRaw: median(single) >= 0.7 * rawRate,
  },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
fs.rmSync(base, { recursive: true, force: true });
