import type { HiveMessage } from '../protocol/message.ts';
import type { PendingItem, PendingOptions, Transport } from '../queue/transport.ts';
import type { DeadLetterReason } from '../queue/dead-letter.ts';

/**
 * `hive.send()` straight to the router (docs/architecture.md, "Sending"): the supervisor's
 * main thread posts the messages to the router's thread, which routes them in its next
 * pass like any sender's pending items, and acknowledges each once every recipient's inbox
 * holds it durably (or it went to dead-letter with its reason). Nothing is written before
 * the inbox: the delivery's own flush is the send's, so a send costs one flush where the
 * send log cost two in sequence (its own, then the inbox's). Until acknowledged a message
 * lives in the supervisor's memory only: if the router's thread ends first, the supervisor
 * writes the unacknowledged ones to the send log and the router's next incarnation routes
 * them (the inboxes drop the copies it had delivered already).
 *
 * Per sender, these come after everything else the sender has pending (commit records,
 * the send log, outbox files): a send made while the router was down (in the send log)
 * is delivered before one made after it came back.
 */

export interface IngressItem {
  /** The supervisor's number for this send: what the acknowledgement names. */
  tag: number;
  message: HiveMessage;
}

const REF_PREFIX = '!';

/** The ref of an ingress item (`!<tag>`), or null for any other ref. */
function parseIngressRef(ref: string): number | null {
  return ref.startsWith(REF_PREFIX) ? Number(ref.slice(1)) : null;
}

export class Ingress {
  private readonly bySender = new Map<string, Map<number, HiveMessage>>();
  private acked: number[] = [];

  /**
   * Queues the sends whose sender `maySend` (asked once per sender); returns their senders
   * (to route next) and the tags of the others (the main thread writes those to the send
   * log, whose writer gives the reason).
   */
  accept(items: IngressItem[], maySend: (sender: string) => boolean): { senders: string[]; refused: number[] } {
    const verdict = new Map<string, boolean>();
    const refused: number[] = [];
    for (const { tag, message } of items) {
      const from = message.from;
      let ok = verdict.get(from);
      if (ok === undefined) verdict.set(from, (ok = maySend(from)));
      if (!ok) {
        refused.push(tag);
        continue;
      }
      let q = this.bySender.get(from);
      if (!q) this.bySender.set(from, (q = new Map()));
      q.set(tag, message);
    }
    return { senders: [...verdict].filter(([, ok]) => ok).map(([s]) => s), refused };
  }

  /** Tags routed (or dead-lettered) since the last call: the sends to acknowledge. */
  takeAcked(): number[] {
    const out = this.acked;
    this.acked = [];
    return out;
  }

  private done(sender: string, tag: number): void {
    const q = this.bySender.get(sender);
    if (!q?.delete(tag)) return;
    if (q.size === 0) this.bySender.delete(sender);
    this.acked.push(tag);
  }

  /**
   * `inner` with this ingress as one more source of each sender's pending items. When the
   * sender's other sources cannot be read (its outbox is a file, a FIFO...), its sends
   * here are still routed, and `onSourceError` is told why the rest is not.
   */
  over(inner: Transport, onSourceError: (sender: string, error: unknown) => void): Transport {
    const pending = async (sender: string, limit?: number, options?: PendingOptions): Promise<PendingItem[]> => {
      const q = this.bySender.get(sender);
      if (!q) return inner.pending(sender, limit, options);
      let items: PendingItem[];
      try {
        items = await inner.pending(sender, limit, options);
      } catch (err) {
        onSourceError(sender, err);
        items = [];
      }
      // After everything else of the sender, as far as the limit leaves room.
      for (const [tag, message] of q) {
        if (items.length >= (limit ?? Infinity)) break;
        items.push({ ref: `${REF_PREFIX}${tag}`, message, error: null });
      }
      return items;
    };
    const settle = async (sender: string, refs: string[]): Promise<void> => {
      const others = refs.filter((ref) => parseIngressRef(ref) === null);
      if (others.length > 0) await inner.settle(sender, others);
      for (const ref of refs) {
        const tag = parseIngressRef(ref);
        if (tag !== null) this.done(sender, tag);
      }
    };
    const reject = async (sender: string, ref: string, reason: DeadLetterReason): Promise<void> => {
      const tag = parseIngressRef(ref);
      const message = tag === null ? undefined : this.bySender.get(sender)?.get(tag);
      if (tag === null || !message) return inner.reject(sender, ref, reason);
      await inner.deadLetterCopy(message, `${message.id}.json`, reason);
      this.done(sender, tag);
    };
    return {
      kind: inner.kind,
      send: (m) => inner.send(m),
      pending,
      settle,
      reject,
      deadLetterCopy: (m, key, reason) => inner.deadLetterCopy(m, key, reason),
      deliver: (to, m, options) => inner.deliver(to, m, options),
      read: (to, after, limit) => inner.read(to, after, limit),
      cursor: (to) => inner.cursor(to),
      depth: (to) => inner.depth(to),
      agent: (id) => inner.agent(id),
      ...(inner.offerCommits ? { offerCommits: (hints) => inner.offerCommits!(hints) } : {}),
      ...(inner.takeDeliveries ? { takeDeliveries: (recipient) => inner.takeDeliveries!(recipient) } : {}),
      close: () => inner.close(),
    };
  }
}
