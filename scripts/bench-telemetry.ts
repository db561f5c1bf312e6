// npm run bench:telemetry — cost of telemetry: the same workload with telemetry off and
// with OTLP/HTTP export to a local receiver (which only counts spans). Prints JSON.
//  - round trip: client request written durably → echo's reply delivered (light load)
//  - throughput: request/reply pairs per second, requests written in batches of 50
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createHive, type Hive } from '../src/hive.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { round, summarize } from './bench/stats.ts';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);
const AGENTS = 4;

async function roundTrips(hive: Hive): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const m = createMessage({ from: 'client', to: `echo-${i % AGENTS}`, act: 'request', body: `sample ${i}` });
    const replied = new Promise<number>((resolve) => {
      const off = hive.on('delivered', (d) => {
        if (d.agent === 'client' && d.in_reply_to === m.id) {
          off();
          resolve(performance.now());
        }
      });
    });
    const t0 = performance.now();
    writeOutbox(hive.root, [m]);
    hive.supervisor.kickRouter(['client']);
    out.push((await replied) - t0);
    await new Promise((r) => setTimeout(r, 2));
  }
  return out;
}

async function throughput(hive: Hive): Promise<number> {
  let replies = 0;
  const done = new Promise<void>((resolve) => {
    const off = hive.on('delivered', (d) => {
      if (d.agent === 'client' && ++replies === REQUESTS) {
        off();
        resolve();
      }
    });
  });
  const t0 = performance.now();
  for (let i = 0; i < REQUESTS; i += 50) {
    const batch = Array.from({ length: 50 }, (_, j) => createMessage({ from: 'client', to: `echo-${(i + j) % AGENTS}`, act: 'request', body: `load ${i + j}` }));
    writeOutbox(hive.root, batch);
    hive.supervisor.kickRouter(['client']);
    await new Promise((r) => setImmediate(r));
  }
  await done;
  return REQUESTS / ((performance.now() - t0) / 1000);
}

async function run(label: string, telemetry: { otlpEndpoint: string; serviceName: string } | undefined) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-bench-tel-'));
  const hive = createHive({
    root,
    agents: [...Array.from({ length: AGENTS }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' as const } })), { id: 'client', brain: { kind: 'external' as const } }],
    ...(telemetry ? { telemetry } : {}),
  });
  await hive.start();
  await roundTrips(hive); // warm up (bundles, JIT)
  const rt = summarize(await roundTrips(hive));
  const pairs = await throughput(hive);
  await hive.close();
  fs.rmSync(root, { recursive: true, force: true });
  return { label, roundTripMs: rt, pairsPerSecond: round(pairs) };
}

let spans = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (req.url === '/v1/traces') for (const m of body.matchAll(/"spanId"/g)) if (m) spans += 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const results = [];
for (const pass of [1, 2]) {
  results.push({ pass, ...(await run('telemetry off', undefined)) });
  results.push({ pass, ...(await run('telemetry on (OTLP/HTTP)', { otlpEndpoint: endpoint, serviceName: 'bench' })) });
}
server.close();
console.log(JSON.stringify({ samples: SAMPLES, requests: REQUESTS, agents: AGENTS, spansReceived: spans, results }, null, 2));
