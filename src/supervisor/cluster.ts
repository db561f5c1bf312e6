export type { ClusterFile } from './cluster-file.ts';
import type { HiveConfig } from '../config/schema.ts';
import type { ClusterInit } from '../protocol/worker.ts';
import { GOD_ID } from '../protocol/agent-id.ts';

/**
 * What a worker needs to know of cluster mode (docs/architecture.md, "Cluster mode"):
 * `{}` outside it, so a worker's init is the same as before for a one-machine hive.
 */
export function clusterInitOf(config: HiveConfig): { cluster?: ClusterInit } {
  const c = config.cluster;
  if (!c) return {};
  const agents = config.agents.map((a) => a.id);
  return {
    cluster: {
      servers: c.servers,
      prefix: c.prefix,
      replicas: c.replicas,
      host: c.host,
      local: config.agents.filter((a) => a.runsOn === c.host).map((a) => a.id),
      agents: [...new Set([...agents, GOD_ID])],
      placement: Object.fromEntries(config.agents.map((a) => [a.id, a.runsOn ?? 'leased'])),
    },
  };
}

/**
 * True when the agent is pinned to this machine (always outside cluster mode). An unpinned
 * agent of a cluster runs where its lease is held (src/supervisor/leases.ts), so not from
 * the start.
 */
export function runsHere(config: HiveConfig, agentId: string): boolean {
  const c = config.cluster;
  if (!c) return true;
  const a = config.agents.find((x) => x.id === agentId);
  // Not in the config (spawned at run time): it runs where it was spawned.
  return !a || a.runsOn === c.host;
}

/** The agents of a cluster config that no machine is pinned to: placed by lease. */
export function leasedAgents(config: HiveConfig): string[] {
  return config.cluster ? config.agents.filter((a) => !a.runsOn).map((a) => a.id) : [];
}

