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

/**
 * CPU per message for its spans (send, route, deliver, handle), measured in a tight loop:
 * steadier than end-to-end figures on a shared machine. Spans go to a batch processor
 * whose exporter drops them.
 */
async function spanCost(): Promise<{ offNsPerMessage: number; onNsPerMessage: number }> {
  const { startTracing } = await import('../src/telemetry/sdk.ts');
  const spansMod = await import('../src/telemetry/spans.ts');
  const handle = startTracing({ serviceName: 'bench', exportIntervalMs: 1_000, attributes: {}, exporter: { export: (_s, done) => done({ code: 0 }), shutdown: async () => undefined } });
  const m = createMessage({ from: 'client', to: 'echo-0', act: 'request', body: 'x' });
  const once = (tracer: typeof handle.tracer | null) => {
    const sent = spansMod.startSend(tracer, m);
    const route = spansMod.startRoute(tracer, sent.message, ['echo-0']);
    spansMod.startDeliver(tracer, route, sent.message, 'echo-0')?.end();
    route?.end();
    spansMod.startHandle(tracer, sent.message, 'echo-0', 1)?.end();
    sent.span?.end();
  };
  const time = (tracer: typeof handle.tracer | null, n: number) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) once(tracer);
    return Number(process.hrtime.bigint() - t0) / n;
  };
  time(handle.tracer, 20_000); // warm up
  time(null, 20_000);
  const onNs = time(handle.tracer, 50_000);
  const offNs = time(null, 50_000);
  await handle.shutdown();
  return { offNsPerMessage: round(offNs, 0), onNsPerMessage: round(onNs, 0) };
}

const micro = await spanCost();
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
console.log(JSON.stringify({ samples: SAMPLES, requests: REQUESTS, agents: AGENTS, spanCpuPerMessage: micro, spansReceived: spans, results, loadAverage: os.loadavg().map((x) => round(x, 2)) }, null, 2));
