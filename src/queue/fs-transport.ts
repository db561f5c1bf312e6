import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { appendEvent } from '../log/event-log.ts';
import { readStateFile } from '../agent/state-read.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { InboxReader, inboxDepth, type InboxEntry } from './inbox.ts';
import { InboxWriter, type InboxWriterOptions } from './inbox-writer.ts';
import { encodeMessage, markSent, readOutbox, writeOutboxAsync } from './outbox.ts';
import { committedCursor } from './committed-cursor.ts';
import { FsAgentLink, sharedTimer } from './fs-agent-link.ts';
import { deadLetterData, deadLetterFile, type DeadLetterReason } from './dead-letter.ts';
import type { CommitHint, DeliverOptions, DeliveryHint, PendingItem, PendingOptions, Transport } from './transport.ts';
import { SendLogSource, parseSendRef } from './send-log.ts';
import { CommitLogTail, isAfter, MarkWriter, parseCommitRef, readCommitted, readRouted, unroutedMessages, type RoutedMark } from './commit-outbox.ts';

export interface FsTransportOptions {
  /** How many routed files `outbox/.sent/` keeps (default 1000). */
  sentCap?: number;
  /** How many processed entries each inbox log keeps for the duplicate check (default 5000). */
  doneCap?: number;
  /** Bytes after which an inbox log starts a new segment (default 1 MiB). */
  segmentBytes?: InboxWriterOptions['segmentBytes'];
  /** The tick of the links' shared poll (ms, default 2000; FsAgentLink, POLL_EVERY). */
  pollMs?: number;
  /** Keep what each delivery appended for `takeDeliveries` (the router's transport, whose wakes carry them). */
  tellDeliveries?: boolean;
}

/** The filesystem transport, and how the process that hosts agents passes on a wake. */
export interface FsTransport extends Transport {
  /** Tells the links of these agents (opened by this instance) that there may be work. */
  notify(agents: Iterable<string>): void;
  /**
   * Every link opened by this instance looks at its inbox now, as its poll would
   * (FsAgentLink.lookNow): the host's router was replaced, and a dead router's wake may
   * have been lost.
   */
  lookAll(): void;
  /** The router's side: an agent's commits as its host told them (Transport.offerCommits). */
  offerCommits(hints: CommitHint[]): void;
  /** The agent host's side: the commits an agent's link made since the last call, for the router (FsAgentLink.takeCommitHints). */
  takeCommitHints(agent: string): CommitHint[] | null;
  /** The router's side: what was delivered to `recipient` since the last call (`tellDeliveries` only), for its wake. */
  takeDeliveries(recipient: string): DeliveryHint[];
  /** The agent side: batches delivered to agents of this host, as the router told them; their links read them from here and hear of work. */
  offerDeliveries(hints: DeliveryHint[]): void;
}

/**
 * The filesystem transport over a hive root: outbox files, inbox logs (one writer per
 * inbox: this transport, in the router), cursor.json and dead-letter/. The writers and
 * readers it keeps (last seq, known ids, read positions) belong to this instance: one
 * instance per hive may deliver (the router's; `hive.lock` keeps it one per hive).
 * @example const t = createFsTransport('/tmp/hive'); await t.send([msg]);
 */
export function createFsTransport(root: string, options: FsTransportOptions = {}): FsTransport {
  const sentCap = options.sentCap ?? 1_000;
  const doneCap = options.doneCap ?? 5_000;
  const writers = new Map<string, InboxWriter>();
  const readers = new Map<string, InboxReader>();
  const writerOf = (id: string) => {
    let w = writers.get(id);
    if (!w) writers.set(id, (w = new InboxWriter(root, id, { doneCap, tell: options.tellDeliveries === true, ...(options.segmentBytes ? { segmentBytes: options.segmentBytes } : {}) })));
    return w;
  };
  // The commit records as outboxes (src/queue/commit-outbox.ts): where routing stands per
  // agent, the highest commit known to hold nothing unrouted, the messages last handed out.
  const routed = new Map<string, RoutedMark>();
  const clearThrough = new Map<string, number>();
  const handedOut = new Map<string, HiveMessage>();
  const marks = new MarkWriter();
  const routedOf = (id: string) => {
    let r = routed.get(id);
    if (!r) routed.set(id, (r = readRouted(root, id)));
    return r;
  };
  const tails = new Map<string, CommitLogTail>();
  /** Commits their hosts told of (offerCommits), by agent, not taken by a pass yet. */
  const offered = new Map<string, CommitHint[]>();
  /**
   * The newest durable commit of `sender`. A light look (`told`: only told commits made it
   * due) takes the last of the commits its host told of when the log's reader could take
   * them all (no marker read). Any other look reads the marker: something may have been
   * committed that was not told (a commit that spilled, a restart that lost a kick), and the
   * told ones it took only spare reading their lines.
   */
  const committedThrough = (sender: string, told: boolean): number => {
    const hints = offered.get(sender);
    offered.delete(sender);
    const tail = tails.get(sender);
    // Past the routed mark only: below it the marker decides (a stale one, or a log that went back).
    const took = hints !== undefined && tail !== undefined && hints.at(-1)!.commit > routedOf(sender).commit && tail.accept(hints);
    return took && told ? tail.newest : readCommitted(root, sender);
  };
  const fromCommits = (sender: string, limit: number, told: boolean): PendingItem[] => {
    const through = committedThrough(sender, told);
    // `committed` below the routed mark: either the marker is stale (neither it nor `routed`
    // is flushed, so a power cut can leave them so, until the agent's next start marks what
    // it restored) or the agent's log went back: its state.wal was deleted or replaced (by
    // hand, or as a symlink refused) and it goes on from its checkpoint, its new commits
    // reusing numbers already routed (without this they were taken as routed and their
    // messages never delivered). The log itself tells which: its newest commit is past the
    // marker only when the marker is stale. A log that went back is routed from the commit
    // after `committed`: everything up to it was routed under the old numbering.
    if (through >= 0 && through < routedOf(sender).commit && (readStateFile(root, sender)?.commit ?? 0) <= through) {
      appendEvent(root, { type: 'router.log-went-back', agent: sender, committed: through, routed: routedOf(sender).commit });
      const reset = { commit: through, index: Number.MAX_SAFE_INTEGER };
      routed.set(sender, reset);
      marks.write(agentPaths(root, sender).routed, reset);
      clearThrough.delete(sender);
      tails.delete(sender);
    }
    if (through <= 0 || through <= (clearThrough.get(sender) ?? 0)) return [];
    let tail = tails.get(sender);
    if (!tail) tails.set(sender, (tail = new CommitLogTail(root, sender)));
    const items = unroutedMessages(tail.records(through, routedOf(sender).commit), routedOf(sender), through, limit);
    if (items.length === 0) clearThrough.set(sender, through);
    for (const i of items) handedOut.set(`${sender}/${i.ref}`, i.message);
    return items.map((i) => ({ ref: i.ref, message: i.message, error: null }));
  };
  const advance = (sender: string, mark: RoutedMark) => {
    const next = { commit: mark.commit, index: mark.index + 1 };
    if (!isAfter(next, routedOf(sender))) return;
    routed.set(sender, next);
    marks.write(agentPaths(root, sender).routed, next);
  };
  // The supervisor's send log (src/queue/send-log.ts): what hive.send() accepted.
  const sendLog = new SendLogSource(root);
  /** At most this many hints wait per agent (a router far behind reads the log instead). */
  const HINTS_CAP = 256;
  const offerCommits = (hints: CommitHint[]) => {
    for (const h of hints) {
      const list = offered.get(h.agent) ?? [];
      if (list.length >= HINTS_CAP) list.splice(0, list.length);
      list.push(h);
      offered.set(h.agent, list);
    }
  };
  const fromSendLog = (sender: string, limit: number): PendingItem[] =>
    sendLog.pending(sender, limit).map((i) => {
      if (i.message) {
        handedOut.set(`${sender}/${i.ref}`, i.message);
        return { ref: i.ref, message: i.message, error: null };
      }
      rejectedLines.set(`${sender}/${i.ref}`, i.rejected!.text);
      return { ref: i.ref, message: null, error: i.rejected!.error, ageMs: Infinity };
    });
  const rejectedLines = new Map<string, string>();
  const links = new Map<string, FsAgentLink>();
  // The links' safety polls share one timer, their looks spread over its ticks
  // (src/queue/fs-agent-link.ts, sharedTimer and phase).
  const pollMs = options.pollMs ?? 2_000;
  const polls = sharedTimer(pollMs);
  let opened = 0;
  const notify = (agents: Iterable<string>) => {
    for (const id of agents) links.get(id)?.notify();
  };
  const readerOf = (id: string) => {
    let r = readers.get(id);
    if (!r) readers.set(id, (r = new InboxReader(root, id)));
    return r;
  };
  return {
    kind: 'fs',
    async send(messages: HiveMessage[]) {
      await writeOutboxAsync(root, messages);
    },
    async pending(sender: string, limit?: number, pendingOptions?: PendingOptions): Promise<PendingItem[]> {
      const light = pendingOptions?.files === false;
      const committed = fromCommits(sender, limit ?? Infinity, light);
      if (light || (limit !== undefined && committed.length >= limit)) return committed;
      committed.push(...fromSendLog(sender, limit === undefined ? Infinity : limit - committed.length));
      const left = limit === undefined ? undefined : limit - committed.length;
      if (left !== undefined && left <= 0) return committed;
      return [...committed, ...readOutbox(root, sender, left).map((f) => {
        if (f.parsed.ok) return { ref: f.name, message: f.parsed.message, error: null };
        let ageMs = Infinity;
        try {
          // lstat: the age of the entry itself (a symlink's target is never looked at).
          if (!f.notRegular) ageMs = Date.now() - fs.lstatSync(f.file).mtimeMs;
        } catch {
          ageMs = Infinity;
        }
        return { ref: f.name, message: null, error: f.parsed.error, ageMs };
      })];
    },
    async settle(sender: string, refs: string[]) {
      const files: string[] = [];
      const logged: string[] = [];
      // The routed mark moves once per call, to the furthest message settled: one marker
      // write for a pass's batch, not one per message (bench:peers, --cpu-prof).
      let furthest: RoutedMark | null = null;
      for (const ref of refs) {
        const mark = parseCommitRef(ref);
        if (parseSendRef(ref) !== null) {
          logged.push(ref);
          handedOut.delete(`${sender}/${ref}`);
        } else if (!mark) files.push(ref);
        else {
          if (furthest === null || isAfter(mark, furthest)) furthest = mark;
          handedOut.delete(`${sender}/${ref}`);
        }
      }
      if (furthest !== null) advance(sender, furthest);
      if (logged.length > 0) sendLog.settle(sender, logged);
      if (files.length > 0) markSent(root, sender, files, sentCap);
    },
    async reject(sender: string, ref: string, reason: DeadLetterReason) {
      const seq = parseSendRef(ref);
      if (seq !== null) {
        const key = `${sender}/${ref}`;
        const message = handedOut.get(key);
        const text = message ? encodeMessage(message) : `${rejectedLines.get(key) ?? ''}\n`;
        deadLetterData(root, message ? `${message.id}.json` : `sendlog-${sender}-${seq}.json`, text, reason, { exactName: true });
        handedOut.delete(key);
        rejectedLines.delete(key);
        sendLog.settle(sender, [ref]);
        return;
      }
      const mark = parseCommitRef(ref);
      if (!mark) {
        deadLetterFile(root, path.join(agentPaths(root, sender).outbox, ref), reason);
        return;
      }
      const message = handedOut.get(`${sender}/${ref}`);
      if (message) deadLetterData(root, `${message.id}.json`, encodeMessage(message), reason, { exactName: true });
      handedOut.delete(`${sender}/${ref}`);
      advance(sender, mark);
    },
    async deadLetterCopy(message: HiveMessage, key: string, reason: DeadLetterReason) {
      deadLetterData(root, key, encodeMessage(message), reason, { exactName: true });
    },
    async deliver(recipient: string, messages: HiveMessage[], deliverOptions?: DeliverOptions) {
      const outcomes = await writerOf(recipient).append(messages, { inlineFlush: deliverOptions?.alone === true });
      if (outcomes.some((o) => o.status === 'delivered')) notify([recipient]);
      return outcomes;
    },
    async read(recipient: string, afterSeq: number, limit?: number): Promise<InboxEntry[]> {
      return readerOf(recipient).readRejecting(afterSeq, limit, { viewer: true });
    },
    async cursor(recipient: string) {
      return committedCursor(root, recipient);
    },
    async depth(recipient: string) {
      return inboxDepth(root, recipient, committedCursor(root, recipient));
    },
    agent(id: string) {
      links.get(id)?.close();
      const link = new FsAgentLink(root, id, { pollMs, schedule: polls, phase: opened++ }, () => {
        if (links.get(id) === link) links.delete(id);
      });
      links.set(id, link);
      return link;
    },
    notify,
    lookAll() {
      for (const link of links.values()) link.lookNow();
    },
    offerCommits,
    takeCommitHints: (agent: string) => links.get(agent)?.takeCommitHints() ?? null,
    takeDeliveries: (recipient: string) => writers.get(recipient)?.takeTold() ?? [],
    offerDeliveries(hints: DeliveryHint[]) {
      for (const h of hints) links.get(h.agent)?.offer(h);
    },
    close() {
      for (const l of [...links.values()]) l.close();
      marks.close();
      sendLog.close();
      for (const w of writers.values()) w.close();
      writers.clear();
      readers.clear();
    },
  };
}
