// npm run bench — runs every benchmark, writes bench/results.json and prints a table.
// Each benchmark runs in its own process (a clean heap and its own worker threads).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BENCHES = ['bench-queue.ts', 'bench-hive.ts', 'bench-peers.ts', 'bench-memory.ts', 'bench-scale.ts'].filter((f) => fs.existsSync(path.join(REPO, 'scripts', f)));

type Json = Record<string, any>;

/**
 * Each benchmark runs BENCH_RUNS times (default 3): this virtual disk's raw rate moves by
 * 2× within an hour, so one run proves little. The table shows the median of the runs
 * for every figure (and the range for the headline ones); results.json keeps every run.
 */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));

/** The median of each numeric leaf across runs; other leaves from the first run. */
function medianOf(runs: Json[]): Json {
  const first = runs[0]!;
  const out: Json = Array.isArray(first) ? [] : {};
  for (const key of Object.keys(first)) {
    const values = runs.map((r) => r?.[key]);
    if (values.every((v) => typeof v === 'number')) {
      const sorted = (values as number[]).slice().sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      out[key] = sorted.length % 2 ? sorted[mid] : Math.round(((sorted[mid - 1]! + sorted[mid]!) / 2) * 1000) / 1000;
    } else if (first[key] && typeof first[key] === 'object' && values.every((v) => v && typeof v === 'object')) {
      out[key] = medianOf(values as Json[]);
    } else out[key] = first[key];
  }
  return out;
}

/** "min–max" of one figure across runs. */
function range(file: string, pick: (r: Json) => unknown): string {
  const values = (allRuns[file] ?? []).map(pick).filter((v): v is number => typeof v === 'number');
  if (values.length < 2) return '';
  return ` (runs: ${Math.min(...values)}–${Math.max(...values)})`;
}

const results: Record<string, Json> = {};
const allRuns: Record<string, Json[]> = {};
for (const file of BENCHES) {
  const runs: Json[] = [];
  for (let i = 1; i <= RUNS; i++) {
    process.stderr.write(`bench: ${file} run ${i}/${RUNS}...\n`);
    const t0 = Date.now();
    const r = await execa(process.execPath, ['--import', 'tsx', path.join(REPO, 'scripts', file)], { cwd: REPO, reject: false, timeout: 30 * 60_000 });
    if (r.exitCode !== 0) {
      process.stderr.write(`bench: ${file} failed: exit ${r.exitCode}: ${String(r.stderr).slice(-500)}\n`);
      continue;
    }
    runs.push({ ...JSON.parse(String(r.stdout)), seconds: Math.round((Date.now() - t0) / 1000) });
  }
  allRuns[file] = runs;
  results[file] = runs.length > 0 ? { ...medianOf(runs), runs: runs.length } : { error: `all ${RUNS} runs failed (see stderr)` };
}

const q = results['bench-queue.ts'] ?? {};
const h = results['bench-hive.ts'] ?? {};
const m = results['bench-memory.ts'] ?? {};
const s = results['bench-scale.ts'] ?? {};
const p = results['bench-peers.ts'] ?? {};
const rows: [string, string, string][] = [
  ['raw durable write (write+fsync+rename+dir fsync), same run', `${q.rawDurableWrite?.perSecond ?? '?'} /s${range('bench-queue.ts', (r) => r.rawDurableWrite?.perSecond)}, p50 ${q.rawDurableWrite?.latencyMs?.p50 ?? '?'} ms`, 'baseline'],
  ['outbox single durable writes', `${q.outboxSingle?.messagesPerSecond ?? '?'} /s (${q.outboxSingle?.ratioToRaw ?? '?'}× raw)`, '≥ 0.7× raw'],
  ['outbox batches of 100', `${q.outboxBatch100?.messagesPerSecond ?? '?'} /s (${q.outboxBatch100?.ratioToRaw ?? '?'}× raw)`, '—'],
  ['inbox delivery, batches of 100', `${q.deliverBatch100?.messagesPerSecond ?? '?'} /s (${q.deliverBatch100?.ratioToRaw ?? '?'}× raw)`, '≥ 1.0× raw'],
  ['delivery latency, write durable → recipient committed (running hive)', `p50 ${h.deliveryLatencyMs?.p50 ?? '?'} ms${range('bench-hive.ts', (r) => r.deliveryLatencyMs?.p50)}, p99 ${h.deliveryLatencyMs?.p99 ?? '?'} ms`, 'p50 ≤ 5, p99 ≤ 25 ms'],
  ['  the same right after start (fresh hive)', `p50 ${h.freshHive?.deliveryLatencyMs?.p50 ?? '?'} ms${range('bench-hive.ts', (r) => r.freshHive?.deliveryLatencyMs?.p50)}, p99 ${h.freshHive?.deliveryLatencyMs?.p99 ?? '?'} ms`, '—'],
  ['request/reply pairs at saturation (8 echo agents, a durable backlog, median of rounds)', `${h.requestReplyPairsPerSecond?.median ?? '?'} /s${range('bench-hive.ts', (r) => r.requestReplyPairsPerSecond?.median)} (${h.requestReplyPairsPerSecond?.ratioToRawDurableWrite ?? '?'}× raw)`, '≥ 1,000 /s'],
  [`  the warm-up round (fresh hive, ${h.requestReplyPairsPerSecond?.warmUpRound?.requests ?? '?'} requests)`, `${h.requestReplyPairsPerSecond?.warmUpRound?.perSecond ?? '?'} /s${range('bench-hive.ts', (r) => r.requestReplyPairsPerSecond?.warmUpRound?.perSecond)}`, '—'],
  ['  with a load client process writing the requests meanwhile', `${h.requestReplyPairsPerSecond?.withLoadClient?.median ?? '?'} /s${range('bench-hive.ts', (r) => r.requestReplyPairsPerSecond?.withLoadClient?.median)}`, '—'],
  [
    '8 echo agents written as XState machines, rounds interleaved with the built-in echo',
    `${h.machineAgents?.requestReplyPairsPerSecond?.median ?? '?'} pairs/s (paired ratio ${h.machineAgents?.pairedRatioMedian ?? '?'}× echo), delivery p50 ${h.machineAgents?.deliveryLatencyMs?.p50 ?? '?'} ms (${h.machineAgents?.p50DeltaMs ?? '?'} ms over echo)`,
    '≥ 0.8× echo, p50 within 1 ms',
  ],
  ['worker spawn', `p50 ${h.workerSpawnMs?.p50 ?? '?'} ms`, '—'],
  ['cold start, 100 agents (one worker each)', `${h.coldStart?.readyMs ?? '?'} ms${range('bench-hive.ts', (r) => r.coldStart?.readyMs)}`, '≤ 10 s'],
  ['RSS per agent (one worker each)', `${h.rssPerAgentMB ?? '?'} MB`, '≤ 30 MB'],
  ['recovery after supervisor SIGKILL, 100 agents', `median ${s.recovery?.killToReadyMs?.median ?? '?'} ms${range('bench-scale.ts', (r) => r.recovery?.killToReadyMs?.median)}`, '≤ 2 s'],
  ['10,000 agents (100 per worker): start → ready', `${s.bigHive?.startToReadyMs ?? '?'} ms`, '≤ 20 s'],
  ['10,000 agents: requests after ready, p50 / max', `${s.bigHive?.requestsAfterReadyMs?.p50 ?? '?'} / ${s.bigHive?.requestsAfterReadyMs?.max ?? '?'} ms`, 'max ≤ 50 ms'],
  ['10,000 agents: peak RSS', `${s.bigHive?.peakRssMiB ?? '?'} MiB`, '≤ 3 GiB'],
];
for (const name of ['hive', 'hive-pooled', 'sqlite', 'redis']) {
  const sys = p.systems?.[name];
  if (!sys) continue;
  rows.push([
    `peers, same run: ${name} (8 echo agents, backlog sent at once; round trip one in flight)`,
    `${sys.pairsPerSecond?.median ?? '?'} pairs/s (${sys.ratioToHive?.pairsPerSecond ?? '?'}× Hive), round trip p50 ${sys.roundTripMs?.p50 ?? '?'} ms, CPU ${sys.cpuMsPerPair?.saturation ?? '?'} ms/pair, exactly once: ${sys.exactlyOnce?.exactlyOnce ?? '?'}`,
    name === 'hive' ? '≥ 1.0× the better peer' : '—',
  ]);
}
if (m && !m.error && m.query) {
  rows.push(['memory search, 100 agents × 100 KiB', `p50 ${m.query.p50Ms} ms, p99 ${m.query.p99Ms} ms (spawning /bin/true: ${m.baseline?.spawnTrueMs} ms)`, 'p50 ≤ 5, p99 ≤ 20 ms']);
  rows.push(['memory re-mine after one file changed', `${m.remine?.oneFileChangedMs} ms`, '≤ 100 ms']);
  rows.push(['memory indexing', `${m.indexing?.wingsMbPerSecond} MB/s (wings), ${m.indexing?.mbPerSecond} MB/s with the snapshot`, '—']);
  if (m.mcp) {
    rows.push(['hive mcp send_message (SDK client over stdio)', `p50 ${m.mcp.sendMessageP50Ms} ms, p99 ${m.mcp.sendMessageP99Ms} ms`, 'p50 ≤ 5 ms']);
    rows.push(['hive mcp get_memory, 100 agents × 100 KiB', `p50 ${m.mcp.getMemoryP50Ms} ms, p99 ${m.mcp.getMemoryP99Ms} ms (in-process search p50 ${m.mcp.inProcessSearchP50Ms} ms)`, 'p50 ≤ 10 ms']);
  }
}

const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', totalMemGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10, node: process.version, platform: `${os.platform()} ${os.release()}` };
fs.mkdirSync(path.join(REPO, 'bench'), { recursive: true });
fs.writeFileSync(path.join(REPO, 'bench', 'results.json'), `${JSON.stringify({ measuredAt: new Date().toISOString(), machine, runsPerBenchmark: RUNS, results, allRuns }, null, 2)}\n`);
const table = ['| figure | measured | target |', '|---|---|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
process.stdout.write(`machine: ${machine.cpus} cores ${machine.model}, ${machine.totalMemGiB} GiB, Node ${machine.node}; medians of ${RUNS} runs\n\n${table}\n\nwrote bench/results.json\n`);
