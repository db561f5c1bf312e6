// npm run bench:package — start-up costs of the installed package against the checkout,
// in one run, interleaved: `hive --version`, `hive send`, `hive start` to its ready line
// (4 echo agents), with `node -e ''` as the floor; and, each in a process of its own, worker
// spawn time and RSS per agent (scripts/bench/spawn-probe.mjs). Prints JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, round } from './bench/stats.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-bench-package-'));

execFileSync('npm', ['pack', '--pack-destination', work, '--loglevel=error'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
const tarball = path.join(work, fs.readdirSync(work).find((f) => f.endsWith('.tgz'))!);
const app = path.join(work, 'app');
fs.mkdirSync(app);
fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'bench-consumer', version: '1.0.0', private: true, type: 'module' }));
execFileSync('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app, stdio: ['ignore', 'ignore', 'inherit'] });

const bins = { installed: path.join(app, 'node_modules', '.bin', 'hive'), checkout: path.join(ROOT, 'bin', 'hive.mjs') };

function timed(args: string[], cwd: string): number {
  const t0 = performance.now();
  execFileSync(process.execPath, args, { cwd, stdio: 'ignore' });
  return performance.now() - t0;
}

/** `hive start` with 4 echo agents, from spawn to its ready line. */
function startToReady(bin: string, cwd: string, n: number): Promise<number> {
  const root = path.join(work, `start-${path.basename(cwd)}-${n}`);
  const config = path.join(work, `start-${path.basename(cwd)}-${n}.json`);
  fs.writeFileSync(config, JSON.stringify({ root, audit: { enabled: false }, inspector: { enabled: false }, agents: Array.from({ length: 4 }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' } })) }));
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [bin, 'start', '--config', config, '--quiet'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
      if (out.includes('hive ready')) {
        const ms = performance.now() - t0;
        child.kill('SIGINT');
        child.once('exit', () => resolve(ms));
      }
    });
    child.once('exit', (code) => !out.includes('hive ready') && reject(new Error(`hive start exited ${code}`)));
  });
}

const samples: Record<string, number[]> = {};
const add = (k: string, v: number) => (samples[k] ??= []).push(v);
const sendRoot = path.join(work, 'send-hive');
execFileSync(process.execPath, [bins.installed, 'init', '--root', sendRoot], { stdio: 'ignore' });
for (let r = 0; r < ROUNDS; r++) {
  add('node -e', timed(['-e', ''], app));
  for (const [where, bin] of Object.entries(bins)) {
    const cwd = where === 'installed' ? app : ROOT;
    add(`${where}: hive --version`, timed([bin, '--version'], cwd));
    add(`${where}: hive send`, timed([bin, 'send', '--root', sendRoot, '--from', 'god', '--to', 'god', '--act', 'inform', '--body', `r${r}`], cwd));
    if (r < 3) add(`${where}: hive start → ready (4 echo agents)`, await startToReady(bin, cwd, r));
  }
}
// Worker spawn and RSS: the probe imports the package by name from the consumer project, and
// the sources (through tsx) in the checkout. Spawn samples are pooled over the rounds.
const RSS_AGENTS = Number(process.env.BENCH_RSS_AGENTS ?? 20);
const probe = path.join(ROOT, 'scripts', 'bench', 'spawn-probe.mjs');
fs.copyFileSync(probe, path.join(app, 'spawn-probe.mjs'));
const rss: Record<string, number[]> = {};
for (let r = 0; r < 3; r++) {
  for (const where of ['installed', 'checkout'] as const) {
    const dir = path.join(work, `probe-${where}-${r}`);
    const args = where === 'installed'
      ? ['--expose-gc', path.join(app, 'spawn-probe.mjs'), 'hive-runtime', dir, String(RSS_AGENTS)]
      : ['--expose-gc', '--import', 'tsx', probe, path.join(ROOT, 'src', 'index.ts'), dir, String(RSS_AGENTS)];
    const line = execFileSync(process.execPath, args, { cwd: where === 'installed' ? app : ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const got = JSON.parse(line.trim().split('\n').at(-1)!) as { spawnMs: number[]; rssPerAgentMB: number };
    for (const ms of got.spawnMs) add(`${where}: worker spawn`, ms);
    (rss[where] ??= []).push(got.rssPerAgentMB);
  }
}
const out = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, { medianMs: round(median(v)), minMs: round(Math.min(...v)), maxMs: round(Math.max(...v)), n: v.length }]));
process.stdout.write(`${JSON.stringify({ benchmark: 'package', node: process.version, rounds: ROUNDS, startupMs: out, rssPerAgentMB: Object.fromEntries(Object.entries(rss).map(([k, v]) => [k, { median: round(median(v), 1), rounds: v.map((x) => round(x, 1)), agents: RSS_AGENTS }])) }, null, 2)}\n`);
fs.rmSync(work, { recursive: true, force: true });
