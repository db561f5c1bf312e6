import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ensureAgent, ensureHive } from '../layout/ensure.ts';
import type { HiveConfig } from '../config/schema.ts';
import { remember } from '../memory/remember.ts';
import { ChaosChild } from './child.ts';
import { createRng } from './rng.ts';
import { CLIENT, Workload } from './workload.ts';
import { FAULT_KINDS, WHILE_DOWN, brainThrow, diskFull, fifo, garbageOutbox, strayFolder, supervisorKill, symlink, workerTerminate, type FaultContext, type FaultKind, type FaultRecord } from './faults.ts';
import { watchRouting } from './routing-watch.ts';
import { SUPERVISED_KINDS, checkInvariants, type Invariant } from './invariants.ts';
import { controlRequest } from '../supervisor/control.ts';
import { shippedFile } from '../package-files.ts';
import type { PlantName } from '../testing/seams.ts';

/** The workload's brain (src/chaos/brain.ts; compiled, in the package). */
const BRAIN = shippedFile('src/chaos/brain.ts');

export interface ChaosOptions {
  /** The hive to model: its agent ids and placement are used; brains are replaced. */
  config: Pick<HiveConfig, 'agents' | 'supervisor'> & Partial<Pick<HiveConfig, 'root'>>;
  durationMs: number;
  seed: number;
  /** Where the chaos hive lives (a fresh temp folder by default; never the real root). */
  root?: string;
  /** Run the hive with a deliberately broken step (src/testing/seams.ts): the invariants must catch it. */
  plant?: PlantName;
  /** Workload ticks per second. */
  rate?: number;
  /** Restrict the plan to these fault kinds (default: every kind at least once). */
  faults?: FaultKind[];
  /** The invariant "routing never stopped for more than N s": N in ms (default 5,000). */
  maxStallMs?: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  ok: boolean;
  seed: number;
  root: string;
  durationMs: number;
  agents: number;
  workload: { requests: number; broadcasts: number; memoryEntries: number; answers: number };
  faults: Record<FaultKind, { injected: number; recovered: number }>;
  recoveryMs: { p50: number | null; max: number | null; samples: number };
  invariants: Invariant[];
  events: FaultRecord[];
  exitCode: number | null;
  /** Fault kinds left out of this run, with the reason (disk-full needs a file system it can mount). */
  skipped: Partial<Record<FaultKind, string>>;
  /** The longest time routing stood still while traffic ran and nothing excused it (ms). */
  maxStallMs: number;
}

/** The fault plan: every kind (of `kinds`) at least once, the rest drawn from the seed. */
function plan(rng: ReturnType<typeof createRng>, steps: number, kinds: readonly FaultKind[]): FaultKind[] {
  const base = rng.shuffle(kinds);
  const pool = kinds.filter((k) => !WHILE_DOWN.has(k));
  const extra = Array.from({ length: Math.max(0, steps - base.length) }, () => rng.pick(pool.length ? pool : kinds));
  return [...base, ...extra];
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/**
 * Runs a workload on a copy of a hive while injecting faults from a seed, then checks
 * the invariants. The engine behind `hive chaos` and the chaos tests.
 * @example const report = await runChaos({ config, durationMs: 20_000, seed: 7 });
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const rng = createRng(options.seed);
  const work = options.root ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hive-chaos-'));
  const skipped: Partial<Record<FaultKind, string>> = {};
  let kinds: readonly FaultKind[] = options.faults ?? FAULT_KINDS;
  // A full disk is made by filling a file system of the hive's own: a tmpfs mounted on
  // <work>/disk (root only), where the run happens; the hive is copied out to <work>/hive
  // afterwards, so `--keep` keeps it. Where mounting is impossible, the fault is left out
  // and the report says why.
  let home = work;
  if (kinds.includes('disk-full')) {
    const scratch = path.join(work, 'disk');
    fs.mkdirSync(scratch, { recursive: true });
    const problem = mountScratch(scratch);
    if (problem === null) home = scratch;
    else {
      fs.rmdirSync(scratch);
      skipped['disk-full'] = problem;
      kinds = kinds.filter((k) => k !== 'disk-full');
      log(`chaos: disk-full left out: ${problem}`);
    }
  }
  try {
    const report = await runChaosIn(home, kinds, skipped, options, rng, log);
    return home === work ? report : { ...report, root: path.join(work, 'hive') };
  } finally {
    if (home !== work) {
      // cp -a keeps what plain copies refuse: the FIFOs and symlinks the faults planted.
      spawnSync('cp', ['-a', path.join(home, 'hive'), path.join(work, 'hive')]);
      unmountScratch(home);
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
}

/** One chaos run in `work` with the given fault kinds (runChaos prepares the folder). */
async function runChaosIn(work: string, kinds: readonly FaultKind[], skipped: Partial<Record<FaultKind, string>>, options: ChaosOptions, rng: ReturnType<typeof createRng>, log: (line: string) => void): Promise<ChaosReport> {
  const root = path.join(work, 'hive');
  const agentIds = options.config.agents.map((a) => a.id);
  if (agentIds.length < 2) agentIds.push(...['chaos-a', 'chaos-b'].slice(0, 2 - agentIds.length));
  const configFile = path.join(work, 'chaos.config.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      root,
      agents: [
        ...agentIds.map((id) => ({ id, brain: { kind: 'module', module: BRAIN }, ...(options.config.agents.find((a) => a.id === id)?.host ? { host: options.config.agents.find((a) => a.id === id)!.host } : {}) })),
        { id: CLIENT, brain: { kind: 'external' } },
      ],
      router: { pollMs: 500 },
      supervisor: {
        agentsPerWorker: options.config.supervisor?.agentsPerWorker ?? 1,
        inboxPollMs: 500,
        stopGraceMs: 5_000,
        restart: { maxRestarts: 1_000, withinMs: 60_000, backoff: { initialMs: 20, maxMs: 500, factor: 2, jitter: 0.2 } },
      },
    }),
  );
  await ensureHive(root);
  await ensureAgent(root, { id: CLIENT, brain: { kind: 'external' } });
  for (const id of agentIds) await ensureAgent(root, { id, brain: { kind: 'module', module: BRAIN } });

  const child = new ChaosChild(configFile, options.plant ? ['--test-plant', options.plant] : []);
  const workload = new Workload(root, agentIds, rng, (r, a, text) => remember(r, a, text));
  const outside = path.join(work, 'outside');
  fs.mkdirSync(outside, { recursive: true });
  const ctx: FaultContext = { root, child, rng, workload, agents: agentIds, garbage: new Set(), records: [], recoveryTimeoutMs: 20_000, outside, excuse: { routing: false } };
  const t0 = Date.now();
  try {
    return await drive();
  } finally {
    await child.kill(); // no-op after a clean stop; no hive process outlives a failed run
    workload.close();
  }

  async function drive(): Promise<ChaosReport> {
    await child.start();
    log(`chaos: hive up at ${root} (${agentIds.length} agents), seed ${options.seed}`);

    let running = true;
    const stall = watchRouting(root, ctx.excuse);
    const interval = 1000 / (options.rate ?? 40);
    // The workload failing (a bug in it, not a fault) ends the run at once with its error; held
    // in a promise that is awaited only at the end, it would first be an unhandled rejection.
    let trafficFailed: { error: unknown } | null = null;
    const traffic = (async () => {
      while (running) {
        await workload.tick();
        await new Promise((r) => setTimeout(r, interval));
      }
    })().catch((error: unknown) => {
      trafficFailed = { error };
      running = false;
    });

    const faults = plan(rng, Math.max(kinds.length, Math.round(options.durationMs / 1_500)), kinds);
    const end = t0 + options.durationMs;
    let slowActive = false;
    for (let i = 0; i < faults.length && !trafficFailed; ) {
      if (Date.now() >= end && i >= kinds.length) break;
      await new Promise((r) => setTimeout(r, rng.int(150, 600)));
      const kind = faults[i]!;
      i += 1;
      log(`chaos: ${kind}`);
      if (kind === 'supervisor-kill' || WHILE_DOWN.has(kind)) {
        const riders: FaultKind[] = WHILE_DOWN.has(kind) ? [kind] : [];
        if (kind === 'supervisor-kill' && rng.next() < 0.5) riders.push(rng.pick(['journal-truncate', 'torn-inbox', 'garbage-inbox'] as const));
        const slow = riders.includes('slow-disk');
        await supervisorKill(ctx, riders, slow);
        slowActive = slow;
      } else if (kind === 'worker-terminate') await workerTerminate(ctx);
      else if (kind === 'brain-throw') await brainThrow(ctx);
      else if (kind === 'garbage-outbox') await garbageOutbox(ctx);
      else if (kind === 'stray-folder') await strayFolder(ctx);
      else if (kind === 'fifo') await fifo(ctx);
      else if (kind === 'symlink') await symlink(ctx);
      else if (kind === 'disk-full') await diskFull(ctx);
    }
    while (Date.now() < end && !trafficFailed) await new Promise((r) => setTimeout(r, 50));
    running = false;
    await traffic;
    const stalled = stall.stop();
    if (trafficFailed) throw (trafficFailed as { error: unknown }).error;
    if (slowActive) await supervisorKill(ctx, [], false);

    // Drain: answer the people's questions until every request has its reply, or until
    // nothing has moved for a while (a lost message never arrives: the invariants say so).
    let last = -1;
    let lastChange = Date.now();
    while (Date.now() - lastChange < 8_000) {
      await workload.answerQuestions();
      const got = await workload.repliesHeld();
      if (got >= workload.requests.size) break;
      if (got !== last) {
        last = got;
        lastChange = Date.now();
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // Let actors restarted at the very end finish starting (up to 10 s); whatever is still
    // not running then is reported by the invariant.
    const settleUntil = Date.now() + 10_000;
    while (Date.now() < settleUntil) {
      const status = await controlRequest<{ actors?: { kind: string; status: string }[] }>(root, { op: 'status' }).catch(() => null);
      if (status?.actors?.filter((a) => SUPERVISED_KINDS.has(a.kind)).every((a) => a.status === 'running')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const stopped = await child.stop();
    const final = (stopped.status as { actors?: { id: string; kind: string; status: string }[] } | null) ?? null;
    const invariants = await checkInvariants(root, workload, agentIds, final, ctx.garbage);
    if (stopped.code !== 0) invariants.push({ name: 'graceful stop', held: false, detail: `the hive exited with code ${stopped.code}` });
    const maxStallMs = options.maxStallMs ?? 5_000;
    invariants.push({
      name: `routing never stopped for more than ${maxStallMs / 1000} s`,
      held: stalled.maxMs <= maxStallMs,
      detail: `longest stall ${stalled.maxMs} ms${stalled.endedAt ? ` (ended ${new Date(stalled.endedAt).toISOString()})` : stalled.maxMs > 0 ? ' (still stalled at the end)' : ''}, not counting the supervisor down or the disk full`,
    });

    const faultsByKind = Object.fromEntries(FAULT_KINDS.map((k) => [k, { injected: 0, recovered: 0 }])) as ChaosReport['faults'];
    for (const r of ctx.records) {
      faultsByKind[r.kind].injected += 1;
      if (r.recoveryMs !== null) faultsByKind[r.kind].recovered += 1;
    }
    const recoveries = ctx.records.filter((r) => r.recoveryMs !== null && r.kind !== 'garbage-inbox' && r.kind !== 'garbage-outbox').map((r) => r.recoveryMs!);
    return {
      ok: invariants.every((i) => i.held),
      seed: options.seed,
      root,
      durationMs: Date.now() - t0,
      agents: agentIds.length,
      workload: { requests: workload.requests.size, broadcasts: workload.broadcasts.length, memoryEntries: workload.memory.length, answers: workload.answers.size },
      faults: faultsByKind,
      recoveryMs: { p50: percentile(recoveries, 50), max: percentile(recoveries, 100), samples: recoveries.length },
      invariants,
      events: ctx.records,
      exitCode: stopped.code,
      skipped,
      maxStallMs: stalled.maxMs,
    };
  }
}

/** Mounts a tmpfs on `dir` for the disk-full fault; the reason it could not, or null. */
function mountScratch(dir: string): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (mounting a tmpfs needs root)';
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512m,mode=0700', 'tmpfs', dir], { encoding: 'utf8' });
  return r.status === 0 ? null : `mount -t tmpfs failed: ${(r.stderr || r.error?.message || '').trim()}`;
}

function unmountScratch(dir: string): void {
  spawnSync('umount', ['-l', dir]);
}

/** The report as text. */
export function formatReport(r: ChaosReport): string {
  const lines = [`chaos run: seed ${r.seed}, ${Math.round(r.durationMs / 1000)} s, ${r.agents} agents, hive ${r.root}`];
  lines.push(`workload: ${r.workload.requests} requests, ${r.workload.broadcasts} broadcasts, ${r.workload.memoryEntries} memory entries, ${r.workload.answers} answers`);
  lines.push('faults injected (recovered):');
  for (const [k, v] of Object.entries(r.faults)) lines.push(`  ${k.padEnd(18)} ${v.injected} (${v.recovered})`);
  for (const [k, why] of Object.entries(r.skipped)) lines.push(`  ${k.padEnd(18)} left out: ${why}`);
  lines.push(`recovery: p50 ${r.recoveryMs.p50 ?? '-'} ms, max ${r.recoveryMs.max ?? '-'} ms over ${r.recoveryMs.samples} faults`);
  lines.push(`routing: longest stall ${r.maxStallMs} ms while traffic ran (not counting the supervisor down or the disk full)`);
  lines.push('invariants:');
  for (const i of r.invariants) lines.push(`  ${i.held ? 'held  ' : 'FAILED'} ${i.name}: ${i.detail}`);
  lines.push(r.ok ? 'all invariants held' : 'INVARIANTS FAILED');
  return `${lines.join('\n')}\n`;
}
