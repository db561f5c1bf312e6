import { readClusterFile, type ClusterFile } from './cluster-file.ts';
import { errorMessage } from '../errors.ts';

/**
 * Which machine each agent of a cluster hive runs on (`hive status`, the inspector): a
 * pinned agent where `cluster.json` places it, a leased one on the machine holding its
 * lease now (KV `<prefix>_leases`, src/supervisor/leases.ts), null while no machine holds it.
 */
export class AgentPlacementView {
  private where: Record<string, string | null> = {};

  private constructor(
    readonly cluster: ClusterFile,
    private readonly leaseHolder: (agent: string) => Promise<string | null>,
    private readonly onClose: () => Promise<void>,
  ) {}

  /** Null outside cluster mode (no `cluster.json`). */
  static async open(root: string): Promise<AgentPlacementView | null> {
    const cluster = readClusterFile(root);
    if (!cluster) return null;
    const { connect, Kvm } = await import('../queue/nats.ts');
    // Never gives up reconnecting: the inspector keeps its view open through a NATS outage.
    const nc = await connect({ servers: cluster.servers, name: `hive-${cluster.prefix}-where`, timeout: 5_000, maxReconnectAttempts: -1, reconnectTimeWait: 1_000 });
    const kv = await new Kvm(nc).open(`${cluster.prefix}_leases`);
    const holder = async (agent: string) => {
      const e = await kv.get(agent.replaceAll('.', '='));
      if (!e || e.operation !== 'PUT' || e.length === 0) return null;
      try {
        const host = e.json<{ host?: unknown }>().host;
        return typeof host === 'string' ? host : null;
      } catch {
        return null;
      }
    };
    return new AgentPlacementView(cluster, holder, () => nc.close());
  }

  /** As of the last `refresh`. */
  current(): Readonly<Record<string, string | null>> {
    return this.where;
  }

  async refresh(agents: string[]): Promise<Readonly<Record<string, string | null>>> {
    const entries = await Promise.all(
      agents.map(async (a) => {
        const placed = this.cluster.placement[a];
        if (placed && placed !== 'leased') return [a, placed] as const;
        if (placed !== 'leased') return [a, null] as const; // not an agent of this hive's config
        return [a, await this.leaseHolder(a).catch(() => null)] as const;
      }),
    );
    this.where = Object.fromEntries(entries);
    return this.where;
  }

  close(): Promise<void> {
    return this.onClose().catch(() => undefined);
  }
}

/** One look (for a command): where each agent runs, or null outside cluster mode. */
export async function whereAgentsRun(root: string, agents: string[]): Promise<{ view: ClusterFile; where: Readonly<Record<string, string | null>> } | null> {
  let view: AgentPlacementView | null;
  try {
    view = await AgentPlacementView.open(root);
  } catch (err) {
    throw new Error(`Cannot read where agents run: ${errorMessage(err)}`, { cause: err });
  }
  if (!view) return null;
  try {
    return { view: view.cluster, where: await view.refresh(agents) };
  } finally {
    await view.close();
  }
}
