// Worker spawn time and RSS per agent of one Hive build, measured in a process of its own.
// Usage: node [--import tsx] spawn-probe.mjs <module to import: 'hive-runtime' or a path> <work folder> <agents for RSS>
// Prints one JSON line: { spawnMs: number[], rssPerAgentMB }.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [spec, work, agentsArg] = process.argv.slice(2);
const { createHive } = await import(spec.startsWith('/') ? pathToFileURL(spec).href : spec);
const quiet = { audit: { enabled: false }, inspector: { enabled: false } };

const small = createHive({ root: path.join(work, 'spawn'), ...quiet, agents: [{ id: 'echo-0', brain: { kind: 'echo' } }] });
await small.start();
const spawnMs = [];
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  await small.spawn({ id: `spawned-${i}`, brain: { kind: 'echo' } });
  spawnMs.push(performance.now() - t0);
}
await small.close();

const agents = Number(agentsArg);
globalThis.gc?.();
const before = process.memoryUsage().rss;
const big = createHive({ root: path.join(work, 'rss'), ...quiet, agents: Array.from({ length: agents }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' } })) });
await big.start();
await new Promise((r) => setTimeout(r, 500));
const rssPerAgentMB = (process.memoryUsage().rss - before) / agents / 2 ** 20;
await big.close();
process.stdout.write(`${JSON.stringify({ spawnMs, rssPerAgentMB })}\n`);
