// Hive as a peer: a running hive of 8 echo agents and an external client. A request is a
// hive.send() (what a program using Hive calls; concurrent sends share one group commit of
// the send log); its reply counts once the router delivered it, durably, into the client's inbox.
import { createHive } from '../../../src/hive.ts';
import { listInbox } from '../../../src/queue/inbox.ts';
import { readStateFile } from '../../../src/agent/state-store.ts';
import { checkCounts, type Peer, type PeerCheck } from './peer.ts';

/**
 * `agentsPerWorker` 1 is Hive's default (each agent isolated in its own worker thread);
 * more puts them in fewer isolates, so the JIT compiles the agent code fewer times and
 * fewer threads share the cores (the `hive-pooled` peer).
 */
export async function startHivePeer(root: string, agents: string[], agentsPerWorker = 1, name = 'hive'): Promise<Peer> {
  const hive = createHive({
    root,
    audit: { enabled: false },
    inspector: { enabled: false },
    supervisor: { agentsPerWorker },
    agents: [...agents.map((id) => ({ id, brain: { kind: 'echo' as const } })), { id: 'client', brain: { kind: 'external' as const } }],
  });
  await hive.start();
  const listeners = new Set<(ids: string[]) => void>();
  hive.on('delivered', (d) => {
    if (d.agent !== 'client' || !d.in_reply_to) return;
    for (const l of listeners) l([d.in_reply_to]);
  });
  return {
    name,
    async send(requests) {
      await Promise.all(requests.map((r) => hive.send({ id: r.id, from: 'client', to: r.to, act: 'request', body: r.body })));
    },
    onReplies(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    check(requestIds): PeerCheck {
      const counts = new Map<string, number>();
      for (const e of listInbox(root, 'client')) {
        const m = e.message;
        if (m?.in_reply_to) counts.set(m.in_reply_to, (counts.get(m.in_reply_to) ?? 0) + 1);
      }
      const handled = agents.reduce((n, a) => n + (readStateFile(root, a)?.snapshot.context.handled ?? 0), 0);
      return checkCounts(requestIds, counts, handled);
    },
    close: () => hive.close(),
  };
}
