import { readClusterFile } from '../supervisor/cluster-file.ts';
import { createFsTransport } from './fs-transport.ts';
import type { InboxRow } from './inbox.ts';
import type { Transport } from './transport.ts';

/**
 * The message path as the hive's tools read it (`hive inbox`, `hive ask`, `hive status`):
 * the filesystem's on one machine; in cluster mode (a `cluster.json` in the folder, written
 * by the machine's router) JetStream's, where the inboxes and commit records of every
 * machine's agents are. Close it when done.
 * @example const t = await openToolTransport(root); const rows = await inboxRows(t, 'god'); t.close();
 */
export async function openToolTransport(root: string): Promise<Transport> {
  const cluster = readClusterFile(root);
  if (!cluster) return createFsTransport(root);
  const { createJetStreamTransport } = await import('./jetstream-transport.ts');
  return createJetStreamTransport({ servers: cluster.servers, prefix: cluster.prefix });
}

/** Every entry an inbox holds, each marked done when at or below the agent's committed cursor. */
export async function inboxRows(t: Transport, agent: string): Promise<InboxRow[]> {
  const [entries, cursor] = await Promise.all([t.read(agent, 0), t.cursor(agent)]);
  return entries.map((e) => ({ ...e, done: e.seq <= cursor }));
}
