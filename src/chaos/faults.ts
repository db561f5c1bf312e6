import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { controlRequest } from '../supervisor/control.ts';
import { HiveError, isHiveError } from '../errors.ts';
import { listDeadLetters } from '../queue/dead-letter.ts';
import { encodeCommitLine, readStateFile, stateWalEnd } from '../agent/state-store.ts';
import type { ChaosChild } from './child.ts';
import type { Rng } from './rng.ts';
import type { Workload } from './workload.ts';

/** Every fault the engine injects (README: Reliability). */
export const FAULT_KINDS = [
  'worker-terminate',
  'brain-throw',
  'supervisor-kill',
  'journal-truncate',
  'torn-inbox',
  'garbage-inbox',
  'garbage-outbox',
  'slow-disk',
  'stray-folder',
  'fifo',
  'symlink',
  'disk-full',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults that need the supervisor down; they ride on a supervisor kill. */
export const WHILE_DOWN: ReadonlySet<FaultKind> = new Set(['journal-truncate', 'torn-inbox', 'garbage-inbox', 'slow-disk']);

export interface FaultRecord {
  kind: FaultKind;
  at: number;
  /** ms until the hive was observed to have recovered; null if it was not observed. */
  recoveryMs: number | null;
  detail: string;
}

export interface FaultContext {
  root: string;
  child: ChaosChild;
  rng: Rng;
  workload: Workload;
  agents: string[];
  /** Names of garbage files that must end in dead-letter/. */
  garbage: Set<string>;
  records: FaultRecord[];
  recoveryTimeoutMs: number;
  /** Where things outside the hive go (a symlink's target): the chaos work folder. */
  outside: string;
  /** Set while routing is stopped on purpose (the supervisor is down, the disk is full). */
  excuse: { routing: boolean };
}

function record(ctx: FaultContext, kind: FaultKind, t0: number, recovered: boolean, detail: string): void {
  ctx.records.push({ kind, at: t0, recoveryMs: recovered ? Date.now() - t0 : null, detail });
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

export async function workerTerminate(ctx: FaultContext): Promise<void> {
  const agent = ctx.rng.pick(ctx.agents);
  const restarted = ctx.child.waitFor((e) => e.event === 'restarted' && (e.agents as string[]).includes(agent), ctx.recoveryTimeoutMs, `restart of ${agent}`);
  const t0 = Date.now();
  await controlRequest(ctx.root, { op: 'crash', agent });
  const ok = await restarted.then(() => true, () => false);
  record(ctx, 'worker-terminate', t0, ok, `terminated the worker of ${agent}`);
}

export async function brainThrow(ctx: FaultContext): Promise<void> {
  const agent = ctx.rng.pick(ctx.agents);
  const restarted = ctx.child.waitFor((e) => e.event === 'restarted' && (e.agents as string[]).includes(agent), ctx.recoveryTimeoutMs, `restart of ${agent}`);
  const t0 = Date.now();
  const m = ctx.workload.request('throw', agent);
  const ok = await restarted.then(() => true, () => false);
  record(ctx, 'brain-throw', t0, ok, `${agent}'s brain threw on ${m.id}`);
}

async function garbage(ctx: FaultContext, kind: 'garbage-outbox'): Promise<void> {
  const agent = ctx.rng.pick(ctx.agents);
  const name = `junk-${Date.now()}-${ctx.rng.int(0, 1e6)}.json`;
  const dir = agentPaths(ctx.root, agent).outbox;
  const t0 = Date.now();
  fs.writeFileSync(path.join(dir, name), ctx.rng.next() < 0.5 ? '{ "half": ' : JSON.stringify({ from: agent, to: '../../etc', act: 'inform', body: 1 }));
  ctx.garbage.add(name);
  const ok = await until(() => listDeadLetters(ctx.root).some((d) => d.name.endsWith(name)), ctx.recoveryTimeoutMs);
  record(ctx, kind, t0, ok, `${dir.slice(ctx.root.length + 1)}/${name}`);
}

export const garbageOutbox = (ctx: FaultContext) => garbage(ctx, 'garbage-outbox');

/** A folder under agents/ that is no agent (plain, or a symlink out of the hive), and a send to it. */
export async function strayFolder(ctx: FaultContext): Promise<void> {
  const n = ctx.rng.int(0, 1e6);
  const name = `stray-${Date.now().toString(36)}-${n}`;
  const folder = path.join(hivePaths(ctx.root).agents, name);
  const outsideDir = path.join(ctx.outside, name);
  const linked = ctx.rng.next() < 0.5;
  if (linked) {
    fs.mkdirSync(path.join(outsideDir, 'inbox'), { recursive: true });
    fs.mkdirSync(path.join(outsideDir, 'outbox'), { recursive: true });
    fs.symlinkSync(outsideDir, folder);
  } else fs.mkdirSync(path.join(folder, 'inbox'), { recursive: true });
  const t0 = Date.now();
  const m = ctx.workload.sendTo(name);
  ctx.garbage.add(`${m.id}.json`);
  const ok = await until(() => listDeadLetters(ctx.root).some((d) => d.name.endsWith(`${m.id}.json`)), ctx.recoveryTimeoutMs);
  record(ctx, 'stray-folder', t0, ok, `agents/${name}${linked ? ` → ${outsideDir}` : ''}, and a message to it`);
}

/** A FIFO in an outbox (opening it would block the router for ever). */
export async function fifo(ctx: FaultContext): Promise<void> {
  const agent = ctx.rng.pick(ctx.agents);
  const name = `fifo-${Date.now()}-${ctx.rng.int(0, 1e6)}.json`;
  const file = path.join(agentPaths(ctx.root, agent).outbox, name);
  const t0 = Date.now();
  const made = spawnSync('mkfifo', [file]);
  if (made.status !== 0) throw new Error(`mkfifo ${file} failed: ${String(made.stderr)}`);
  ctx.garbage.add(name);
  const ok = await until(() => listDeadLetters(ctx.root).some((d) => d.name.endsWith(name)), ctx.recoveryTimeoutMs);
  record(ctx, 'fifo', t0, ok, `agents/${agent}/outbox/${name}`);
}

/** A symlink in an outbox: to a file outside the hive, or to another agent's state. */
export async function symlink(ctx: FaultContext): Promise<void> {
  const agent = ctx.rng.pick(ctx.agents);
  const other = ctx.rng.pick(ctx.agents);
  const name = `link-${Date.now()}-${ctx.rng.int(0, 1e6)}.json`;
  const to = ctx.rng.next() < 0.5 ? '/etc/passwd' : agentPaths(ctx.root, other).stateWal;
  const t0 = Date.now();
  fs.symlinkSync(to, path.join(agentPaths(ctx.root, agent).outbox, name));
  ctx.garbage.add(name);
  const ok = await until(() => listDeadLetters(ctx.root).some((d) => d.name.endsWith(name)), ctx.recoveryTimeoutMs);
  record(ctx, 'symlink', t0, ok, `agents/${agent}/outbox/${name} → ${to}`);
}

/**
 * The disk fills up for a moment, then has room again: the hive must pause, not fail,
 * and go on by itself. Recovery: freed → a new request answered. Needs the hive on a
 * file system of its own (the engine mounts a tmpfs: see runChaos).
 */
export async function diskFull(ctx: FaultContext): Promise<void> {
  const filler = path.join(path.dirname(ctx.root), `filler-${Date.now()}`);
  ctx.excuse.routing = true;
  const fd = fs.openSync(filler, 'w');
  try {
    const chunk = Buffer.alloc(1 << 20, 7);
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
  const heldMs = ctx.rng.int(1_000, 3_000);
  await new Promise((r) => setTimeout(r, heldMs));
  fs.rmSync(filler);
  const t0 = Date.now();
  const probe = await until(() => ctx.workload.trySend(), ctx.recoveryTimeoutMs);
  const ok = probe && (await until(() => ctx.workload.answered(ctx.workload.lastId()), ctx.recoveryTimeoutMs));
  ctx.excuse.routing = false;
  record(ctx, 'disk-full', t0, ok, `disk full for ${heldMs} ms, then room again`);
}

/**
 * While the supervisor is down: a torn commit in a state log, as a power cut in the middle
 * of its write leaves it (the first part of a real next commit's line, the rest of the
 * preallocated log still zeros), and `log.jsonl` cut mid-line.
 */
function truncateJournals(ctx: FaultContext): string {
  const agent = ctx.rng.pick(ctx.agents);
  const p = agentPaths(ctx.root, agent);
  const done: string[] = [];
  const last = fs.existsSync(p.stateWal) ? readStateFile(ctx.root, agent) : undefined;
  if (last) {
    const end = stateWalEnd(ctx.root, agent);
    // The commit that would come next, whole and valid, of which only a part reached the disk.
    const next = encodeCommitLine({ ...last, commit: last.commit + 1, cursor: last.cursor + 1, committed_at: new Date().toISOString() });
    const torn = next.subarray(0, ctx.rng.int(1, next.length - 1));
    const fd = fs.openSync(p.stateWal, 'r+');
    if (end + torn.length < fs.fstatSync(fd).size) {
      fs.writeSync(fd, torn, 0, torn.length, end);
      done.push(`agents/${agent}/state.wal (a commit torn after ${torn.length} of ${next.length} bytes, at ${end})`);
    }
    fs.closeSync(fd);
  }
  const log = hivePaths(ctx.root).log;
  const size = fs.statSync(log).size;
  if (size > 40) {
    fs.truncateSync(log, size - ctx.rng.int(5, 30));
    done.push('log.jsonl (cut mid-line)');
  }
  return done.join(', ');
}

/** The last segment of a random agent's inbox log (null when nothing was delivered to it yet). */
function lastSegment(ctx: FaultContext, agent: string): { file: string; name: string } | null {
  const dir = agentPaths(ctx.root, agent).inbox;
  const names = fs.readdirSync(dir).filter((n) => /^\d{12}\.jsonl$/.test(n)).sort();
  const name = names.at(-1);
  return name ? { file: path.join(dir, name), name } : null;
}

/** While the supervisor is down: half a line at the end of an inbox log (a write cut short). */
function tearInbox(ctx: FaultContext): string {
  const agent = ctx.rng.pick(ctx.agents);
  const seg = lastSegment(ctx, agent);
  if (!seg) return `agents/${agent}/inbox: nothing delivered yet, not torn`;
  fs.appendFileSync(seg.file, '{"seq":999999,"sum":"00000000000000');
  return `agents/${agent}/inbox/${seg.name} (torn tail)`;
}

/** While the supervisor is down: a whole line of junk at the end of an inbox log (written by hand): dead-lettered when the router opens the log. */
function junkInInbox(ctx: FaultContext): string {
  const agent = ctx.rng.pick(ctx.agents);
  const seg = lastSegment(ctx, agent);
  if (!seg) return `agents/${agent}/inbox: nothing delivered yet, no junk written`;
  fs.appendFileSync(seg.file, ctx.rng.next() < 0.5 ? '{ "half": \n' : `${JSON.stringify({ from: agent, to: '../../etc', act: 'inform', body: 1 })}\n`);
  ctx.garbage.add(`of-${agent}-${seg.name}`);
  return `agents/${agent}/inbox/${seg.name} (a line of junk)`;
}

/**
 * SIGKILL the supervisor process, apply the faults that need it down, start it again.
 * Recovery time: kill → ready line (every actor restored, routing).
 */
export async function supervisorKill(ctx: FaultContext, riders: FaultKind[], slow: boolean): Promise<void> {
  const t0 = Date.now();
  ctx.excuse.routing = true;
  await ctx.child.kill();
  const notes: string[] = [];
  for (const r of riders) {
    if (r === 'journal-truncate') notes.push(truncateJournals(ctx));
    if (r === 'torn-inbox') notes.push(tearInbox(ctx));
    if (r === 'garbage-inbox') notes.push(junkInInbox(ctx));
  }
  // A hive that does not come back is the run's finding, with the reason (the child's
  // stderr when it exited): every later fault would only fail on the missing control socket.
  await ctx.child.start(slow ? ['--test-fsync-delay-ms', '4'] : []).catch((err: Error) => {
    const after = notes.filter(Boolean).join(', ');
    throw new HiveError(isHiveError(err, 'E_TIMEOUT') ? 'E_TIMEOUT' : 'E_WORKER', `the supervisor did not come back after SIGKILL${after ? ` (while down: ${after})` : ''}: ${err.message}`, { cause: err });
  });
  ctx.excuse.routing = false;
  // A retrying client resends its last requests once the hive is back (same ids).
  await new Promise((r) => setTimeout(r, 300));
  ctx.workload.resendRecent();
  record(ctx, 'supervisor-kill', t0, true, slow ? 'restarted with a slow disk' : 'restarted');
  for (const r of riders) record(ctx, r, t0, true, notes.shift() ?? (r === 'slow-disk' ? 'fsync delayed 4 ms until the next restart' : ''));
}
