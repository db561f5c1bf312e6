import type { ClusterInit } from '../protocol/worker.ts';
import { createFsTransport, type FsTransportOptions } from './fs-transport.ts';
import type { CommitHint, DeliveryHint, Transport } from './transport.ts';
import type { JetStreamTransport } from './jetstream-transport.ts';

export type HostTransport = Transport & {
  notify(agents: Iterable<string>): void;
  /** The filesystem's: the commits an agent made since the last call, for the router (null: not known, the router reads). */
  takeCommitHints?(agent: string): CommitHint[] | null;
  /** The filesystem's: batches the router delivered to this host's agents (it told them with its wake). */
  offerDeliveries?(hints: DeliveryHint[]): void;
  /** The filesystem's: every link looks at its inbox now (a new router: the old one's last wake may be lost). */
  lookAll?(): void;
  /** Cluster mode: the JetStream transport under it (streams to make, commits to hear of). */
  jetstream?: JetStreamTransport;
};

/**
 * The transport a worker opens: the filesystem's on one machine; in cluster mode JetStream
 * for the message path, with the local folder's outbox files as ingress and its
 * dead-letter/ for dead letters (src/queue/cluster-transport.ts). The NATS client is loaded
 * only in cluster mode.
 */
export async function openHostTransport(
  root: string,
  cluster: ClusterInit | undefined,
  options: FsTransportOptions & { isRecipient?: (id: string) => boolean; isLocal?: (id: string) => boolean } = {},
): Promise<HostTransport> {
  const files = createFsTransport(root, options);
  if (!cluster) return files;
  const [{ createJetStreamTransport }, { createClusterTransport }] = await Promise.all([import('./jetstream-transport.ts'), import('./cluster-transport.ts')]);
  const js = await createJetStreamTransport({ servers: cluster.servers, prefix: cluster.prefix, replicas: cluster.replicas, ...(options.pollMs ? { pollMs: options.pollMs } : {}) });
  const known = new Set(cluster.agents);
  const pinned = new Set(cluster.local);
  const local = { has: options.isLocal ?? ((id: string) => pinned.has(id)) };
  return Object.assign(createClusterTransport(js, files, { local, isRecipient: options.isRecipient ?? ((id) => known.has(id)) }), { jetstream: js });
}
