import fs from 'node:fs';
import path from 'node:path';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { createFsTransport } from '../queue/fs-transport.ts';
import type { Transport } from '../queue/transport.ts';
import { listDeadLetters } from '../queue/dead-letter.ts';
import { readStateFile } from '../agent/state-store.ts';
import { TMP_PREFIX } from '../fs/atomic.ts';
import { parseIntentName } from '../lock/owner.ts';
import { CLIENT, type Workload } from './workload.ts';

/** Actors that must be running at the end: agents, the router and the memory actors. */
export const SUPERVISED_KINDS: ReadonlySet<string> = new Set(['agent', 'router', 'miner', 'reflector']);

export interface Invariant {
  name: string;
  held: boolean;
  detail: string;
}

async function idsIn(t: Transport, agent: string): Promise<Set<string>> {
  return new Set((await t.read(agent, 0)).map((e) => e.id));
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    // Temp files, and lock intent markers with no lock beside them (every process is gone now).
    const intent = parseIntentName(name);
    if (name.startsWith(TMP_PREFIX) || (intent && !fs.existsSync(path.join(dir, intent.lock)))) out.push(full);
    if (fs.lstatSync(full).isDirectory()) walk(full, out); // lstat: a symlinked stray folder is not walked into
  }
  return out;
}

/**
 * The invariants checked after a chaos run (README: Reliability). Inboxes are read through
 * the hive's transport, as its agents and tools read them.
 */
export async function checkInvariants(root: string, w: Workload, agents: string[], final: { actors?: { id: string; kind: string; status: string }[] } | null, garbage: Set<string>): Promise<Invariant[]> {
  const t = createFsTransport(root);
  try {
    return await checkWith(t, root, w, agents, final, garbage);
  } finally {
    t.close();
  }
}

async function checkWith(t: Transport, root: string, w: Workload, agents: string[], final: { actors?: { id: string; kind: string; status: string }[] } | null, garbage: Set<string>): Promise<Invariant[]> {
  const out: Invariant[] = [];
  const check = (name: string, problems: string[], ok: string) => out.push({ name, held: problems.length === 0, detail: problems.length ? problems.slice(0, 10).join('; ') + (problems.length > 10 ? ` (+${problems.length - 10} more)` : '') : ok });

  const inboxIds = new Map<string, Set<string>>();
  for (const a of new Set([...agents, ...[...w.answers.values()].map((x) => x.to)])) inboxIds.set(a, await idsIn(t, a));
  const lost: string[] = [];
  for (const [id, r] of w.requests) if (!inboxIds.get(r.to)?.has(id)) lost.push(`request ${id} to ${r.to}`);
  for (const id of w.broadcasts) for (const a of agents) if (!inboxIds.get(a)?.has(id)) lost.push(`broadcast ${id} at ${a}`);
  for (const [id, a] of w.answers) if (!inboxIds.get(a.to)?.has(id)) lost.push(`answer ${id} to ${a.to}`);
  check('no acknowledged message lost', lost, `${w.requests.size} requests, ${w.broadcasts.length} broadcasts (×${agents.length}), ${w.answers.size} answers all delivered`);

  const replies = new Map<string, number>();
  for (const e of await t.read(CLIENT, 0)) {
    const m = e.message;
    if (m?.in_reply_to) replies.set(m.in_reply_to, (replies.get(m.in_reply_to) ?? 0) + 1);
  }
  const answerProblems: string[] = [];
  for (const id of w.requests.keys()) {
    const n = replies.get(id) ?? 0;
    if (n !== 1) answerProblems.push(`request ${id} has ${n} replies`);
  }
  check('every request answered exactly once', answerProblems, `${w.requests.size} requests, ${w.requests.size} replies`);

  const twice: string[] = [];
  for (const a of agents) {
    const state = readStateFile(root, a)?.snapshot.context.brainState as { requests?: number; broadcasts?: number } | null | undefined;
    const expectReq = [...w.requests.values()].filter((r) => r.to === a).length;
    if ((state?.requests ?? 0) !== expectReq) twice.push(`${a} handled ${state?.requests ?? 0} requests, expected ${expectReq}`);
    if ((state?.broadcasts ?? 0) !== w.broadcasts.length) twice.push(`${a} handled ${state?.broadcasts ?? 0} broadcasts, expected ${w.broadcasts.length}`);
  }
  check('none handled twice', twice, `each agent's committed counters match what it was sent`);

  const missing: string[] = [];
  for (const m of w.memory) {
    const text = fs.readFileSync(agentPaths(root, m.agent).memory, 'utf8');
    const n = text.split(m.marker).length - 1;
    if (n !== 1) missing.push(`${m.marker} appears ${n} times in ${m.agent}/memory.md`);
  }
  check('every memory entry present', missing, `${w.memory.length} entries present once each`);

  const notRestored = (final?.actors ?? [])
    .filter((a) => SUPERVISED_KINDS.has(a.kind))
    .filter((a) => a.status !== 'running')
    .map((a) => `${a.id} is ${a.status}`);
  if (!final) notRestored.push('no final status from the supervisor');
  check('every actor restored', notRestored, `${(final?.actors ?? []).filter((a) => SUPERVISED_KINDS.has(a.kind)).length} actors running at the end (agents, router, miner, reflector)`);

  const temps = walk(hivePaths(root).root).map((f) => path.relative(root, f));
  check('no temp files left', temps, 'none');

  const dead = listDeadLetters(root);
  const unaccounted = dead.filter((d) => !d.reason || !d.reason.error || ![...garbage].some((g) => d.name.endsWith(g))).map((d) => `${d.name}: ${d.reason?.error ?? 'no reason file'}`);
  const notDead = [...garbage].filter((g) => !dead.some((d) => d.name.endsWith(g)));
  check('every dead letter accounted for', [...unaccounted, ...notDead.map((g) => `garbage ${g} not dead-lettered`)], `${dead.length} dead letters, each an injected garbage file with its reason`);
  return out;
}
