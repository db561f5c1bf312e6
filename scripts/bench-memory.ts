// npm run bench:memory — the memory index at scale: 100 agents × 100 KiB of memory.
// Prints one JSON document: indexing MB/s, query p50/p99, incremental re-mine time, and
// the baseline of the munder-difflin design (a CLI process per search): what spawning a
// trivial process costs here. Figures are medians of several rounds.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { runMinePass, type MineSettings } from '../src/memory/mine.ts';
import { createPoolJobs } from '../src/memory/pool.ts';
import { searchMemory } from '../src/memory/search.ts';
import { PalaceIndex, palaceIndex } from '../src/memory/search-index.ts';
import { remember } from '../src/memory/remember.ts';
import { median, round, summarize } from './bench/stats.ts';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100);
const KIB = Number(process.env.BENCH_KIB ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 400);
const THREADS = Number(process.env.BENCH_THREADS ?? Math.max(1, Math.min(2, os.availableParallelism())));

// ---- a deterministic English-like corpus ------------------------------------------------

let seed = 42;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/**
 * One Zipf law (s = 1) over the whole vocabulary, as in real text: the top ranks are
 * function words (about 40 % of all tokens, dropped as stop words by the index), the
 * long tail is content words. Queries use content words only.
 */
const FUNCTION_WORDS = 'the of and to a in is that for it on with as was we be by this at from or are an not have has had but were been its they which their will would can our'.split(' ');
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tor', 'sa', 'vi', 'del', 'pra', 'zu', 'quin', 'bes', 'ol', 'nar', 'fe', 'gri', 'ux', 'ta', 'mo', 'che', 'dra', 'pel'];
const SUFFIXES = ['', '', '', 's', 'ed', 'ing', 'ment', 'ation'];
const vocabulary: string[] = [...FUNCTION_WORDS];
const seen = new Set<string>(vocabulary);
while (vocabulary.length < 20_000) {
  let w = '';
  const n = 2 + Math.floor(random() * 3);
  for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
  w += SUFFIXES[Math.floor(random() * SUFFIXES.length)];
  if (!seen.has(w)) {
    seen.add(w);
    vocabulary.push(w);
  }
}
const cdf: number[] = [];
let total = 0;
for (let i = 1; i <= vocabulary.length; i++) cdf.push((total += 1 / i));
/** A word by rank, at or above `from` (0: any word; FUNCTION_WORDS.length: content only). */
function zipfWord(from = 0): string {
  const lo0 = from === 0 ? 0 : cdf[from - 1]!;
  const x = lo0 + random() * (total - lo0);
  let lo = from;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return vocabulary[lo]!;
}
const contentWord = () => zipfWord(FUNCTION_WORDS.length);
function sentence(): string {
  const words: string[] = [];
  const n = 8 + Math.floor(random() * 14);
  for (let i = 0; i < n; i++) words.push(zipfWord());
  if (random() < 0.2) words.push(String(Math.floor(random() * 10_000)));
  const s = words.join(' ');
  return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
}
function memoryText(name: string, bytes: number): string {
  let text = `# ${name}\n\n## Memories\n\n`;
  for (let i = 0; Buffer.byteLength(text) < bytes; i++) {
    const day = `2025-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`;
    let body = '';
    const n = 4 + Math.floor(random() * 8);
    for (let s = 0; s < n; s++) body += `${sentence()} `;
    text += `## ${day} — ${contentWord()} ${contentWord()} ${contentWord()}${i % 25 === 0 ? ' <!-- PINNED -->' : ''}\n\n${body.trim()}\n\n`;
  }
  return text;
}

// ---- setup -------------------------------------------------------------------------------

const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'hive-bench-memory-'));
const root = path.join(base, 'hive');
await ensureHive(root);
let corpusBytes = 0;
for (let a = 0; a < AGENTS; a++) {
  const id = `agent-${String(a).padStart(3, '0')}`;
  await ensureAgent(root, { id, brain: { kind: 'echo' } });
  const text = memoryText(`Agent ${a}`, KIB * 1024);
  fs.writeFileSync(agentPaths(root, id).memory, text);
  corpusBytes += Buffer.byteLength(text);
}
// The miner's defaults (MemPalace off: this measures the built-in index).
const settings: MineSettings = {
  ignore: [],
  mempalace: { enabled: false, args: [], mineTimeoutMs: 120_000, searchTimeoutMs: 10_000 },
  snapshotBytes: 262_144,
  configDir: process.cwd(),
};
const jobs = createPoolJobs({ maxThreads: THREADS });

// ---- indexing ----------------------------------------------------------------------------

await jobs.snapshot(root); // warm the pool (compile the task file, start threads)
// A first mine of everything: the wings (parallel jobs), then the snapshot (one job).
let t = performance.now();
const full = await runMinePass(root, { ...settings, snapshotBytes: Number.MAX_SAFE_INTEGER }, jobs);
const wingsMs = performance.now() - t;
t = performance.now();
const snap = await runMinePass(root, { ...settings, snapshotBytes: 1 }, jobs);
const snapshotMs = performance.now() - t;
if (!snap.snapshot) throw new Error('the snapshot was not built');
const mb = corpusBytes / 1e6;

t = performance.now();
const loaded = new PalaceIndex(root);
loaded.refresh();
const loadMs = performance.now() - t;

// ---- queries -----------------------------------------------------------------------------

const queries: string[] = [];
for (let i = 0; i < QUERIES; i++) {
  const n = 2 + Math.floor(random() * 3);
  queries.push(Array.from({ length: n }, () => contentWord()).join(' '));
}
palaceIndex(root).refresh();
for (const q of queries.slice(0, 30)) await searchMemory(root, q, { mempalace: false });
const rounds: { p50: number; p99: number }[] = [];
let hits = 0;
for (let r = 0; r < ROUNDS; r++) {
  const lat: number[] = [];
  for (const q of queries) {
    const s = performance.now();
    const res = await searchMemory(root, q, { limit: 5, mempalace: false });
    lat.push(performance.now() - s);
    if (r === 0 && res.matches.length > 0) hits++;
  }
  rounds.push(summarize(lat));
}

// ---- incremental re-mine -----------------------------------------------------------------

const remine: number[] = [];
const firstQuery: number[] = [];
for (let r = 0; r < Math.max(3, ROUNDS); r++) {
  const agent = `agent-${String((r * 37) % AGENTS).padStart(3, '0')}`;
  await remember(root, agent, { title: `bench change marker${r}x`, body: sentence() });
  const s = performance.now();
  const pass = await runMinePass(root, settings, jobs);
  remine.push(performance.now() - s);
  if (pass.mined.length !== 1) throw new Error(`expected one wing re-mined, got ${pass.mined.join(',')}`);
  const q = performance.now();
  const found = await searchMemory(root, `marker${r}x`, { mempalace: false });
  firstQuery.push(performance.now() - q);
  if (found.matches[0]?.agent !== agent) throw new Error(`the re-mined entry was not found first (${JSON.stringify(found.matches[0])})`);
}
await jobs.close();

// ---- hive mcp: tool calls from an MCP client (the official SDK), server start excluded -----

const mcp = await measureMcp();

// ---- the munder-difflin baseline: one CLI process per search -----------------------------

const spawnTrue: number[] = [];
for (let i = 0; i < 20; i++) {
  const s = performance.now();
  await execa('true');
  spawnTrue.push(performance.now() - s);
}
const spawnNode: number[] = [];
for (let i = 0; i < 8; i++) {
  const s = performance.now();
  await execa(process.execPath, ['-e', '0']);
  spawnNode.push(performance.now() - s);
}

const queryP50 = median(rounds.map((r) => r.p50));
const report = {
  corpus: { agents: AGENTS, bytes: corpusBytes, documents: full.documents, poolThreads: THREADS },
  indexing: {
    wingsMs: Math.round(wingsMs),
    snapshotMs: Math.round(snapshotMs),
    mbPerSecond: round(mb / ((wingsMs + snapshotMs) / 1000), 2),
    wingsMbPerSecond: round(mb / (wingsMs / 1000), 2),
    indexJsonMB: round(fs.statSync(path.join(root, 'palace', 'index.json')).size / 1e6, 1),
    searcherLoadMs: Math.round(loadMs),
  },
  query: { n: QUERIES, rounds: ROUNDS, p50Ms: round(queryP50), p99Ms: round(median(rounds.map((r) => r.p99))), withMatches: round(hits / QUERIES, 2), target: 'p50 ≤ 5 ms, p99 ≤ 20 ms' },
  remine: {
    oneFileChangedMs: round(median(remine), 1),
    samples: remine.map((x) => round(x, 1)),
    firstQueryAfterMs: round(median(firstQuery), 1),
    target: '≤ 100 ms',
  },
  baseline: {
    design: 'munder-difflin: `mempalace search` spawned per query, 120 s timeout',
    spawnTrueMs: round(median(spawnTrue), 2),
    spawnNodeMs: round(median(spawnNode), 1),
    queryVsSpawnTrue: `${round(median(spawnTrue) / queryP50, 1)}× faster than spawning /bin/true`,
  },
  mcp: {
    what: 'hive mcp for agent-000 over stdio, called by the SDK Client (start excluded): send_message writes one durable outbox file; get_memory runs the search above in the server process',
    sendMessageP50Ms: round(mcp.send.p50),
    sendMessageP99Ms: round(mcp.send.p99),
    getMemoryP50Ms: round(mcp.memory.p50),
    getMemoryP99Ms: round(mcp.memory.p99),
    inProcessSearchP50Ms: round(queryP50),
    targets: { sendMessageP50AtMost5ms: mcp.send.p50 <= 5, getMemoryP50AtMost10ms: mcp.memory.p50 <= 10 },
  },
  node: process.version,
  cpus: os.availableParallelism(),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
if (process.env.BENCH_KEEP) process.stderr.write(`kept ${root}\n`);
else fs.rmSync(base, { recursive: true, force: true });

async function measureMcp(): Promise<{ send: { p50: number; p99: number }; memory: { p50: number; p99: number } }> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { agentToken } = await import('../src/hooks/agent-token.ts');
  const agent = 'agent-000';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(path.dirname(fileURLToPath(import.meta.url)), 'hive.mjs'), 'mcp'],
    env: { PATH: process.env.PATH ?? '', HIVE_ROOT: root, AGENT_ID: agent, HIVE_AGENT_TOKEN: agentToken(root, agent) },
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  const timed = async (calls: (() => Promise<unknown>)[]) => {
    const lat: number[] = [];
    for (const c of calls) {
      const s0 = performance.now();
      const r = (await c()) as { isError?: boolean; content?: { text: string }[] };
      lat.push(performance.now() - s0);
      if (r.isError) throw new Error(`tool call failed: ${r.content?.[0]?.text}`);
    }
    return lat;
  };
  const send = (i: number) => () => client.callTool({ name: 'send_message', arguments: { to: 'agent-001', act: 'inform', body: `bench ${i}` } });
  const search = (q: string) => () => client.callTool({ name: 'get_memory', arguments: { query: q, limit: 5 } });
  await timed([...Array.from({ length: 20 }, (_, i) => send(i)), ...queries.slice(0, 20).map(search)]); // warm up
  const sendMs = await timed(Array.from({ length: 200 }, (_, i) => send(100 + i)));
  const memoryMs = await timed(queries.map(search));
  await client.close();
  return { send: summarize(sendMs), memory: summarize(memoryMs) };
}
