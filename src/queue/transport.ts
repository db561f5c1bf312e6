import type { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { InboxEntry } from './inbox.ts';
import type { DeliveryOutcome } from './inbox-writer.ts';
import type { DeadLetterReason } from './dead-letter.ts';

/**
 * The message transport (docs/architecture.md, "Transport"). The filesystem queues are the embedded default;
 * a broker-backed transport (NATS JetStream: outbox = a publish, inbox = a stream
 * with message-id dedupe, cursor = a durable consumer) must pass the same
 * conformance suite (`test/conformance/transport.ts`).
 */
export interface Transport {
  readonly kind: string;

  /** Durably accepts messages from their senders. Resolves only when on stable storage. */
  send(messages: HiveMessage[]): Promise<void>;
  /** Items a sender has sent that are not routed yet, in the order they were sent. */
  pending(sender: string, limit?: number): Promise<PendingItem[]>;
  /** Marks routed items so `pending` no longer returns them. */
  settle(sender: string, refs: string[]): Promise<void>;
  /** Moves one pending item to the dead-letter store with its reason. */
  reject(sender: string, ref: string, reason: DeadLetterReason): Promise<void>;
  /**
   * Stores a copy of a message that could not reach one of its recipients (the others got
   * it, so the item itself is settled). Idempotent on `key`: a pass re-run after a crash
   * stores it once.
   */
  deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason): Promise<void>;

  /**
   * Delivers messages to one recipient: gap-free seq numbers, idempotent on id. Rejects
   * with `E_UNKNOWN_AGENT` when the recipient has no inbox.
   */
  deliver(recipient: string, messages: HiveMessage[]): Promise<DeliveryOutcome[]>;
  /** Delivered entries with seq > afterSeq, in order; invalid entries are dead-lettered. */
  read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]>;
  /** The recipient's committed cursor (last processed seq). */
  cursor(recipient: string): Promise<number>;
  /** Durably commits the recipient's cursor. */
  commit(recipient: string, seq: number): Promise<void>;
  /** Lets go of what the transport holds open (files, connections). */
  close(): void;
}

export interface PendingItem {
  /** Opaque reference for settle/reject (a file name for the filesystem transport). */
  ref: string;
  message: HiveMessage | null;
  /** Why the item is not a valid message (set when `message` is null). */
  error: HiveError | null;
  /** For an invalid item: ms since it was last written (a writer may still be at it). */
  ageMs?: number;
}
