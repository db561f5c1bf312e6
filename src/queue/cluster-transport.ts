import type { HiveMessage } from '../protocol/message.ts';
import type { DeadLetterReason } from './dead-letter.ts';
import type { FsTransport } from './fs-transport.ts';
import type { JetStreamTransport } from './jetstream-transport.ts';
import type { InboxEntry } from './inbox.ts';
import type { AgentLink, PendingItem, PendingOptions, Transport } from './transport.ts';
import type { DeliveryOutcome } from './inbox-writer.ts';

/**
 * The message path of one machine of a cluster (docs/architecture.md, "Cluster mode"): the
 * inboxes, the agents' commit records and their routing are JetStream's; the ingress stays
 * the local folder's outbox files (`hive send`, a person's `cat > outbox/x.json`, the hive's
 * own notices), validated and dead-lettered as on one machine, and so do the dead letters
 * (the local `dead-letter/`, where `hive dead-letter` reads them).
 *
 * The router of each machine routes what the agents running there committed, and the
 * outbox files of its own folder: no commit is routed by two machines.
 */
export interface ClusterTransportOptions {
  /** The agents that run on this machine now (pinned here, or leased here). */
  local: { has(id: string): boolean };
  /** Every recipient the hive knows (an inbox stream is made for one that has none yet). */
  isRecipient: (id: string) => boolean;
}

/** Marks a JetStream ref: a file name never holds '/', so no outbox file's ref starts so. */
const JS = 'js/';

export function createClusterTransport(js: JetStreamTransport, files: FsTransport, options: ClusterTransportOptions): Transport & { notify(agents: Iterable<string>): void } {
  /** What `pending` handed out from JetStream, by sender and ref (a reject dead-letters it locally). */
  const handed = new Map<string, Map<string, PendingItem>>();
  const split = (refs: string[]) => ({
    fromJs: refs.filter((r) => r.startsWith(JS)).map((r) => r.slice(JS.length)),
    fromFiles: refs.filter((r) => !r.startsWith(JS)),
  });
  return {
    kind: 'cluster',
    async send(messages: HiveMessage[]) {
      await files.send(messages);
    },
    async pending(sender: string, limit = Infinity, pendingOptions?: PendingOptions): Promise<PendingItem[]> {
      if (!options.local.has(sender)) js.release(sender); // it runs elsewhere now: its feeds would only fill up
      const fromJs = options.local.has(sender) ? (await js.pending(sender, limit)).map((p) => ({ ...p, ref: JS + p.ref })) : [];
      if (fromJs.length > 0) handed.set(sender, new Map(fromJs.map((p) => [p.ref, p])));
      const left = limit - fromJs.length;
      // A light look (a publish heard on NATS, with a working watch on the sender's outbox):
      // the local files are not read.
      return left > 0 ? [...fromJs, ...(await files.pending(sender, Number.isFinite(left) ? left : undefined, pendingOptions))] : fromJs;
    },
    async settle(sender: string, refs: string[]) {
      const { fromJs, fromFiles } = split(refs);
      if (fromJs.length > 0) await js.settle(sender, fromJs);
      if (fromFiles.length > 0) await files.settle(sender, fromFiles);
    },
    async reject(sender: string, ref: string, reason: DeadLetterReason) {
      if (!ref.startsWith(JS)) return files.reject(sender, ref, reason);
      const item = handed.get(sender)?.get(ref);
      if (item?.message) {
        await files.deadLetterCopy(item.message, `${item.message.id}.json`, reason);
        await js.settle(sender, [ref.slice(JS.length)]);
      } else await js.reject(sender, ref.slice(JS.length), reason); // not a message: kept in the cluster's dead letters
    },
    async deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason) {
      await files.deadLetterCopy(message, key, reason);
    },
    async deliver(recipient: string, messages: HiveMessage[]): Promise<DeliveryOutcome[]> {
      try {
        return await js.deliver(recipient, messages);
      } catch (err) {
        if ((err as { code?: string }).code !== 'E_UNKNOWN_AGENT' || !options.isRecipient(recipient)) throw err;
        await js.ensureAgent(recipient);
        return js.deliver(recipient, messages);
      }
    },
    read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]> {
      return js.read(recipient, afterSeq, limit);
    },
    cursor(recipient: string) {
      return js.cursor(recipient);
    },
    depth(recipient: string) {
      return js.depth(recipient);
    },
    agent(id: string): AgentLink {
      return js.agent(id);
    },
    notify(agents: Iterable<string>) {
      js.notify(agents);
    },
    close() {
      js.close();
      files.close();
    },
  };
}
