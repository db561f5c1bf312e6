import { controlRequest } from '../../supervisor/control.ts';
import type { ActorStatus } from '../../supervisor/supervisor.ts';
import { isHiveError } from '../../errors.ts';
import { requireHive } from '../../layout/ensure.ts';
import { readRegistry } from '../../registry/registry.ts';
import { committedCursor } from '../../queue/committed-cursor.ts';
import { inboxDepth } from '../../queue/inbox.ts';
import { readStateFile } from '../../agent/state-store.ts';
import { offlineMachineState } from '../../agent/machine-state.ts';
import { JSON_OPTION, ROOT_OPTION, rootOf, type Command } from '../args.ts';
import { painter, statusColour } from '../colour.ts';
import { readClusterFile } from '../../supervisor/cluster-file.ts';
import { whereAgentsRun } from '../../supervisor/where.ts';
import { openToolTransport } from '../../queue/tool-transport.ts';

/** What the disk says when no supervisor is running. */
function offlineStatus(root: string): ActorStatus[] {
  const reg = readRegistry(root);
  return Object.values(reg.agents)
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((a) => {
      const cursor = committedCursor(root, a.id);
      let state = 'not running';
      try {
        state = readStateFile(root, a.id)?.snapshot.value ?? state;
      } catch {
        state = 'unreadable state.json';
      }
      const kind = (a.brain as { kind?: string })?.kind ?? '?';
      return {
        id: a.id,
        kind: kind === 'human' || kind === 'external' ? 'passive' : 'agent',
        brain: kind,
        host: null,
        state,
        status: a.status,
        restarts: 0,
        inboxDepth: inboxDepth(root, a.id, cursor),
        cursor,
        handled: 0,
        threadId: null,
        conversation: null,
        busyMs: null,
        machine: kind === 'machine' ? offlineMachineState(root, a.id) : null,
      } satisfies ActorStatus;
    });
}

async function withClusterDepths(root: string, actors: ActorStatus[]): Promise<ActorStatus[]> {
  const transport = await openToolTransport(root);
  try {
    return await Promise.all(
      actors.map(async (a) => (a.kind === 'agent' || a.kind === 'passive' ? { ...a, cursor: await transport.cursor(a.id), inboxDepth: await transport.depth(a.id) } : a)),
    );
  } catch {
    return actors; // NATS not answering: the local view, as without a cluster
  } finally {
    transport.close();
  }
}

/** The state column: a turn running for a second or more says for how long (`thinking for 12 min`). */
export function stateText(a: Pick<ActorStatus, 'state' | 'busyMs'>): string {
  if (a.busyMs === null || a.busyMs < 1_000) return a.state;
  return `${a.state} for ${formatDuration(a.busyMs)}`;
}

/** 950 → "950 ms", 12_000 → "12 s", 720_000 → "12 min", 7_200_000 → "2 h". */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.floor(ms / 1_000)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min`;
  return `${Math.floor(ms / 3_600_000)} h`;
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'list each actor: kind, state, status, restarts, inbox depth, cursor',
  usage: 'hive status --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    let running = true;
    let actors: ActorStatus[];
    try {
      actors = (await controlRequest<{ actors: ActorStatus[] }>(root, { op: 'status' }, 10_000)).actors;
    } catch (err) {
      if (!isHiveError(err, 'E_NOT_FOUND')) throw err;
      running = false;
      actors = offlineStatus(root);
    }
    const cluster = readClusterFile(root);
    // In cluster mode the inboxes and commit records are JetStream's: the INBOX and CURSOR
    // columns are read there, wherever each agent runs.
    if (cluster) actors = await withClusterDepths(root, actors);
    // A leased agent runs where its lease is held now: read from the cluster (null: unknown).
    const holders = cluster ? await whereAgentsRun(root, actors.map((a) => a.id)).then((w) => w?.where ?? null, () => null) : null;
    if (args.values.json) {
      io.out(`${JSON.stringify({ root, running, actors, ...(cluster ? { cluster: { ...cluster, runsOn: holders } } : {}) }, null, 2)}\n`);
      return 0;
    }
    io.out(`${root}: ${running ? 'running' : 'not running'}\n`);
    if (cluster) {
      io.out(`cluster: this machine is ${cluster.host}, on ${cluster.servers.join(', ')} (nats-server ${cluster.serverVersion}, ${cluster.replicas} replica${cluster.replicas === 1 ? '' : 's'}, prefix ${cluster.prefix})\n`);
      for (const w of cluster.warnings) io.out(`  warning: ${w}\n`);
    }
    // STATE is the turn loop every agent runs; a machine agent's own state has a column of its own.
    const machines = actors.some((a) => a.machine);
    const runsOn = (a: ActorStatus) => {
      const placed = cluster?.placement[a.id] ?? '-';
      const where = placed === 'leased' ? (a.host ? cluster!.host : (holders?.[a.id] ?? null)) : placed;
      if (where === null) return holders ? 'leased (no machine holds it)' : 'leased';
      const notes = [...(where === cluster?.host ? ['here'] : []), ...(placed === 'leased' ? ['leased'] : [])];
      return notes.length > 0 ? `${where} (${notes.join(', ')})` : where;
    };
    const header = ['ACTOR', 'KIND', 'BRAIN', 'STATE', 'STATUS', 'RESTARTS', 'INBOX', 'CURSOR', ...(machines ? ['MACHINE'] : []), ...(cluster ? ['RUNS ON'] : [])];
    const rows = actors.map((a) => [a.id, a.kind, a.brain, stateText(a), a.status, String(a.restarts), String(a.inboxDepth), String(a.cursor), ...(machines ? [a.machine ?? '-'] : []), ...(cluster ? [runsOn(a)] : [])]);
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const paint = painter(io.colour?.out ?? false);
    const cell = (c: string, i: number, row: number) => {
      const padded = c.padEnd(widths[i]!);
      if (row === 0) return paint('bold', padded);
      const colour = i === 4 ? statusColour(c) : null; // padded first: colour codes take no width
      return colour ? paint(colour, padded) : padded;
    };
    for (const [n, r] of [header, ...rows].entries()) io.out(`${r.map((c, i) => cell(c, i, n)).join('  ').trimEnd()}\n`);
    return 0;
  },
};
