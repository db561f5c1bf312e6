import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { writeOutboxAsync } from '../queue/outbox.ts';
import { remember } from '../memory/remember.ts';
import { errorMessage } from '../errors.ts';
import { ChaosChild } from './child.ts';
import { createRng } from './rng.ts';
import { natsClusterInNamespaces, natsClusterOnLoopback, natsServerMissing, type NatsNode } from './nats-node.ts';
import { MachineNetwork } from './netns.ts';
import type { Invariant } from './invariants.ts';
import { checkMachineInvariants, MACHINE_CLIENT } from './machine-invariants.ts';
import { whereAgentsRun } from '../supervisor/where.ts';
import type { PlantName } from '../testing/seams.ts';

/**
 * `hive chaos --machines N`: one hive over N machines, each a real `hive start --host hN`
 * beside its own node of a nats-server cluster on loopback (R3 streams from three nodes),
 * the agents placed by lease. While requests flow in through h1 and memories are written,
 * machines other than h1 are hit, one at a time (the one running the most agents), from the seed:
 *   machine-kill    its supervisor and its nats-server SIGKILLed, both started again later;
 *   machine-freeze  both stopped (SIGSTOP) for longer than a lease, then resumed: a machine
 *                   that stopped answering and comes back believing it still runs its agents;
 *   link-cut        its link down for longer than a lease, then up: a partition, the machine
 *                   running on alone meanwhile. Needs the machines in network namespaces
 *                   (src/chaos/netns.ts: root and `ip`); without them the nodes run on loopback
 *                   and this fault is left out, saying why.
 * The invariants: every request answered exactly once; each agent's last commit counts
 * exactly the requests sent to it; every memory written is in the cluster once and every
 * machine's mirror equals it; every supervisor ran to the end (a graceful stop, exit 0).
 */
export type MachineFaultKind = 'machine-kill' | 'machine-freeze' | 'link-cut';

export interface MachineChaosOptions {
  /** The agents (ids) of the hive to model; each runs an echo brain here, placed by lease. */
  agents: string[];
  machines?: number;
  durationMs: number;
  seed: number;
  /** Where the machines' folders go (a fresh temp folder by default). */
  root?: string;
  log?: (line: string) => void;
  /** Machines in network namespaces when root allows it (default), for link cuts; false: loopback. */
  namespaces?: boolean;
  /** A deliberately broken step in every machine's supervisor (`hive start --test-plant`): the invariants must catch it. */
  plant?: PlantName;
}

export interface MachineFaultRecord {
  kind: MachineFaultKind;
  host: string;
  atMs: number;
  /** How long the machine was down or frozen. */
  downMs: number;
}

export interface MachineChaosReport {
  ok: boolean;
  seed: number;
  root: string;
  machines: number;
  agents: number;
  durationMs: number;
  /** memoryRefused: memory writes the cluster refused while it could not answer (not acknowledged). */
  workload: { requests: number; memoryEntries: number; memoryRefused: number };
  faults: MachineFaultRecord[];
  invariants: Invariant[];
  /** Leases each machine took and lost (agents moving between machines). */
  leases: { host: string; acquired: number; lost: number }[];
  skipped: Record<string, string>;
  /** The deliberately broken step the machines ran with, if any. */
  plant?: PlantName;
}

const CLIENT = MACHINE_CLIENT;
const LEASE_MS = 2_000;

export async function runMachineChaos(o: MachineChaosOptions): Promise<MachineChaosReport> {
  const missing = natsServerMissing();
  if (missing) throw new Error(missing);
  const count = Math.max(2, o.machines ?? 3);
  const log = o.log ?? (() => undefined);
  const rng = createRng(o.seed);
  const base = o.root ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hive-chaos-machines-'));
  const hosts = Array.from({ length: count }, (_, i) => `h${i + 1}`);
  const prefix = `chaos${o.seed % 1_000_000}`;
  const noNamespaces = o.namespaces === false ? 'asked to run on loopback' : MachineNetwork.unavailable();
  const net = noNamespaces ? null : new MachineNetwork(`hc${o.seed % 10_000}`, hosts, 100 + (o.seed % 100));
  net?.up();
  const nodes = net ? natsClusterInNamespaces(base, net, `hive-${prefix}`) : await natsClusterOnLoopback(base, count, `hive-${prefix}`);
  const rootOf = (h: string) => path.join(base, h);
  const supervisors = new Map<string, ChaosChild>();

  const startMachine = async (h: string) => {
    const i = hosts.indexOf(h);
    // Its own node first: what it is cut off from when its machine is.
    const servers = [nodes[i]!.url, ...nodes.filter((_, k) => k !== i).map((n) => n.url)];
    const config = {
      root: rootOf(h),
      agents: [...o.agents.map((id) => ({ id, brain: { kind: 'echo' } })), { id: CLIENT, brain: { kind: 'external' }, runsOn: hosts[0] }],
      cluster: { servers, host: h, prefix, replicas: Math.min(3, count), leaseMs: LEASE_MS },
      audit: { enabled: false },
      inspector: { enabled: false },
      router: { pollMs: 500 },
      supervisor: { inboxPollMs: 500, restart: { backoff: { initialMs: 20, maxMs: 500 } } },
    };
    const file = path.join(base, `${h}.config.json`);
    fs.writeFileSync(file, JSON.stringify(config, null, 2));
    const child = new ChaosChild(file, o.plant ? ['--test-plant', o.plant] : [], net?.wrap(h) ?? []);
    supervisors.set(h, child);
    await child.start(['--host', h], 60_000);
  };

  const sent = new Map<string, HiveMessage[]>(o.agents.map((a) => [a, []]));
  const requests: HiveMessage[] = [];
  const markers = new Map<string, string[]>(o.agents.map((a) => [a, []]));
  const faults: MachineFaultRecord[] = [];
  const t0 = Date.now();
  const report: MachineChaosReport = {
    ok: false,
    seed: o.seed,
    root: base,
    machines: count,
    agents: o.agents.length,
    durationMs: o.durationMs,
    workload: { requests: 0, memoryEntries: 0, memoryRefused: 0 },
    faults,
    ...(o.plant ? { plant: o.plant } : {}),
    invariants: [],
    leases: [],
    skipped: noNamespaces ? { 'link-cut': `cutting a link needs the machines in network namespaces (${noNamespaces})` } : {},
  };
  try {
    log(`machines: ${count} nats-server nodes ${net ? 'in network namespaces' : 'on loopback'}, then ${count} supervisors`);
    await Promise.all(nodes.map((n) => n.start()));
    // The last machine first: it takes the leases, so the faults move agents.
    for (const h of [...hosts].reverse()) await startMachine(h);

    const faultPlan = planFaults(rng, hosts.slice(1), o.durationMs, net !== null);
    let stop = false;
    let refused = 0;
    const load = (async () => {
      for (let tick = 0; !stop; tick++) {
        const batch = Array.from({ length: 4 }, () => {
          const to = rng.pick(o.agents);
          return createMessage({ from: CLIENT, to, act: 'request', body: `chaos ${requests.length}` });
        });
        await writeOutboxAsync(rootOf(hosts[0]!), batch); // acknowledged once this returns
        for (const m of batch) sent.get(m.to)!.push(m);
        requests.push(...batch);
        if (tick % 10 === 0) {
          const agent = rng.pick(o.agents);
          const marker = `chaos-memory-${o.seed}-${tick}`;
          // Through the cluster: refused (E_UNAVAILABLE) while it cannot answer, then not in the ledger.
          const ok = await remember(rootOf(hosts[0]!), agent, `Chaos note\n${marker}`).then(
            () => true,
            (err: unknown) => (log(`memory write refused: ${errorMessage(err)}`), refused++, false),
          );
          if (ok) markers.get(agent)!.push(marker);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    load.catch(() => undefined); // awaited below; an error there fails the run, never the process
    for (const f of faultPlan) {
      await new Promise((r) => setTimeout(r, Math.max(0, f.atMs - (Date.now() - t0))));
      // The machine running the most agents now (where leases are held), so the fault moves them.
      const where = await whereAgentsRun(rootOf(hosts[0]!), o.agents).catch(() => null);
      const busiest = hosts.slice(1).map((h) => [h, Object.values(where?.where ?? {}).filter((x) => x === h).length] as const).sort((a, b) => b[1] - a[1])[0];
      const target = busiest && busiest[1] > 0 ? busiest[0] : f.host;
      const hit = { ...f, host: target, atMs: Date.now() - t0 };
      await inject(hit, nodes[hosts.indexOf(target)]!, supervisors.get(target)!, () => startMachine(target), log, net);
      faults.push(hit);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, o.durationMs - (Date.now() - t0))));
    stop = true;
    await load;
    report.workload = { requests: requests.length, memoryEntries: [...markers.values()].flat().length, memoryRefused: refused };
    log(`${requests.length} requests sent; waiting for every reply`);
    report.invariants = await checkMachineInvariants(nodes[0]!.url, prefix, hosts.map(rootOf), sent, markers);
  } catch (err) {
    report.invariants.push({ name: 'the run completed', held: false, detail: errorMessage(err) });
  } finally {
    const ends = await Promise.all([...supervisors.entries()].map(async ([h, c]) => [h, await c.stop().catch(() => ({ code: null }))] as const));
    const bad = ends.filter(([, e]) => e.code !== 0).map(([h, e]) => ('killed' in e && e.killed ? `${h} did not stop within 30 s (SIGKILLed)` : `${h} exited with ${e.code}`));
    report.invariants.push({ name: 'every supervisor ran to the end and stopped gracefully', held: bad.length === 0, detail: bad.join('; ') || `${ends.length} stopped with exit 0` });
    await Promise.all(nodes.map((n) => n.kill()));
    net?.down();
    report.leases = hosts.map((h) => leaseCounts(h, rootOf(h)));
  }
  report.ok = report.invariants.length > 0 && report.invariants.every((i) => i.held);
  if (!o.root && report.ok) fs.rmSync(base, { recursive: true, force: true });
  return report;
}

/** At least one fault of each kind, spread over the run's middle, never on h1 (the client's machine). */
function planFaults(rng: ReturnType<typeof createRng>, targets: string[], durationMs: number, linkCuts: boolean): MachineFaultRecord[] {
  const kinds: MachineFaultKind[] = ['machine-kill', 'machine-freeze', ...(linkCuts ? (['link-cut'] as const) : [])];
  const n = Math.max(2, Math.floor(durationMs / 15_000));
  const plan = rng.shuffle([...kinds, ...Array.from({ length: n - kinds.length }, () => rng.pick(kinds))]);
  const slot = durationMs / (plan.length + 1);
  return plan.map((kind, i) => ({ kind, host: rng.pick(targets), atMs: Math.round(slot * (i + 0.5)), downMs: rng.int(LEASE_MS * 2, LEASE_MS * 3) }));
}

async function inject(f: MachineFaultRecord, node: NatsNode, supervisor: ChaosChild, restart: () => Promise<void>, log: (line: string) => void, net: MachineNetwork | null): Promise<void> {
  if (f.kind === 'link-cut') {
    log(`${f.host}: link cut for ${f.downMs} ms (its supervisor and nats-server run on)`);
    net!.cut(f.host);
    await new Promise((r) => setTimeout(r, f.downMs));
    net!.heal(f.host);
    log(`${f.host}: link healed`);
  } else if (f.kind === 'machine-kill') {
    log(`${f.host}: SIGKILL of its supervisor and its nats-server, down ${f.downMs} ms`);
    await Promise.all([supervisor.kill(), node.kill()]);
    await new Promise((r) => setTimeout(r, f.downMs));
    await node.start();
    await restart();
    log(`${f.host}: back`);
  } else {
    log(`${f.host}: frozen (SIGSTOP, supervisor and nats-server) for ${f.downMs} ms`);
    const pid = supervisor.pid;
    if (pid) process.kill(pid, 'SIGSTOP');
    node.signal('SIGSTOP');
    await new Promise((r) => setTimeout(r, f.downMs));
    node.signal('SIGCONT');
    if (pid) process.kill(pid, 'SIGCONT');
    log(`${f.host}: resumed`);
  }
}

function leaseCounts(host: string, root: string): { host: string; acquired: number; lost: number } {
  let lines: string[] = [];
  try {
    lines = fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"cluster.lease-'));
  } catch {
    lines = [];
  }
  return { host, acquired: lines.filter((l) => l.includes('lease-acquired')).length, lost: lines.filter((l) => l.includes('lease-lost')).length };
}

export function formatMachineReport(r: MachineChaosReport): string {
  const lines = [`chaos run over ${r.machines} machines: seed ${r.seed}, ${Math.round(r.durationMs / 1000)} s, ${r.agents} agents, folders in ${r.root}${r.plant ? `, planted bug: ${r.plant}` : ''}`];
  lines.push(`workload: ${r.workload.requests} requests, ${r.workload.memoryEntries} memory entries (${r.workload.memoryRefused} refused while the cluster could not answer)`);
  lines.push('faults:');
  for (const f of r.faults) lines.push(`  ${f.kind.padEnd(15)} ${f.host} at ${Math.round(f.atMs / 100) / 10} s for ${f.downMs} ms`);
  for (const [k, why] of Object.entries(r.skipped)) lines.push(`  ${k.padEnd(15)} left out: ${why}`);
  lines.push(`leases: ${r.leases.map((l) => `${l.host} took ${l.acquired}, lost ${l.lost}`).join('; ')}`);
  lines.push('invariants:');
  for (const i of r.invariants) lines.push(`  ${i.held ? 'held  ' : 'FAILED'} ${i.name}: ${i.detail}`);
  lines.push(r.ok ? 'all invariants held' : 'INVARIANTS FAILED');
  return `${lines.join('\n')}\n`;
}
