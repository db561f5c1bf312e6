import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { readInboxRejecting, type InboxEntry } from './inbox.ts';
import { deliver, type MessageSource } from './inbox-deliver.ts';
import { encodeMessage, markSent, readOutbox, writeOutboxAsync } from './outbox.ts';
import { commitCursor, readCursor } from './cursor.ts';
import { deadLetterData, deadLetterFile, type DeadLetterReason } from './dead-letter.ts';
import type { PendingItem, Transport } from './transport.ts';

export interface FsTransportOptions {
  /** How many routed files `outbox/.sent/` keeps (default 1000). */
  sentCap?: number;
  /** How many processed entries `inbox/.done/` keeps (default 5000). */
  doneCap?: number;
}

/**
 * The filesystem transport over a hive root: outbox files, locked seq-numbered inboxes,
 * cursor.json and dead-letter/.
 * @example const t = createFsTransport('/tmp/hive'); await t.send([msg]);
 */
export function createFsTransport(root: string, options: FsTransportOptions = {}): Transport {
  const sentCap = options.sentCap ?? 1_000;
  const doneCap = options.doneCap ?? 5_000;
  // Messages read from outbox files that hold exactly their canonical text: delivery can
  // hard-link those files instead of writing copies.
  const sources = new WeakMap<HiveMessage, MessageSource>();
  return {
    kind: 'fs',
    async send(messages: HiveMessage[]) {
      await writeOutboxAsync(root, messages);
    },
    async pending(sender: string, limit?: number): Promise<PendingItem[]> {
      return readOutbox(root, sender, limit).map((f) => {
        if (f.parsed.ok && f.text === encodeMessage(f.parsed.message)) sources.set(f.parsed.message, { file: f.file, flushed: f.flushed });
        if (f.parsed.ok) return { ref: f.name, message: f.parsed.message, error: null };
        let ageMs = Infinity;
        try {
          // lstat: the age of the entry itself (a symlink's target is never looked at).
          if (!f.notRegular) ageMs = Date.now() - fs.lstatSync(f.file).mtimeMs;
        } catch {
          ageMs = Infinity;
        }
        return { ref: f.name, message: null, error: f.parsed.error, ageMs };
      });
    },
    async settle(sender: string, refs: string[]) {
      markSent(root, sender, refs, sentCap);
    },
    async reject(sender: string, ref: string, reason: DeadLetterReason) {
      deadLetterFile(root, path.join(agentPaths(root, sender).outbox, ref), reason);
    },
    async deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason) {
      deadLetterData(root, key, encodeMessage(message), reason, { exactName: true });
    },
    async deliver(recipient: string, messages: HiveMessage[]) {
      return deliver(root, recipient, messages, { doneCap, sourceOf: (m) => sources.get(m) });
    },
    async read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]> {
      return readInboxRejecting(root, recipient, afterSeq, limit);
    },
    async cursor(recipient: string) {
      return readCursor(root, recipient);
    },
    async commit(recipient: string, seq: number) {
      commitCursor(root, recipient, seq);
    },
  };
}
