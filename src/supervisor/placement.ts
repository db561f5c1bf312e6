/**
 * Which worker hosts which agents. Pure. One agent per worker by default (crash
 * isolation); agents with the same `host` share a named pool; `agentsPerWorker > 1`
 * packs the rest into numbered pools (thousands of agents on a few threads).
 */
export interface Placeable {
  id: string;
  host?: string | undefined;
}

export function hostIdFor(agent: Placeable, agentsPerWorker: number, current: ReadonlyMap<string, readonly string[]>): string {
  if (agent.host) return `pool-${agent.host}`;
  if (agentsPerWorker <= 1) return `agent-${agent.id}`;
  for (const [hostId, members] of current) {
    if (/^pool-\d+$/.test(hostId) && members.length < agentsPerWorker) return hostId;
  }
  let n = 0;
  while (current.has(`pool-${n}`)) n += 1;
  return `pool-${n}`;
}

/** Places every agent; returns hostId → agent ids, in input order. */
export function placeAgents(agents: Placeable[], agentsPerWorker: number): Map<string, string[]> {
  const placement = new Map<string, string[]>();
  for (const a of agents) {
    const hostId = hostIdFor(a, agentsPerWorker, placement);
    const members = placement.get(hostId) ?? [];
    members.push(a.id);
    placement.set(hostId, members);
  }
  return placement;
}
