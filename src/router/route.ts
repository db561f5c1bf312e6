import { BROADCAST, GOD_ID, HUMAN_ALIAS, SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { readDirectory, type AgentDirectory } from './directory.ts';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { stableId } from '../protocol/ids.ts';
import { appendEvents, type HiveEvent } from '../log/event-log.ts';
import type { Transport, PendingItem } from '../queue/transport.ts';
import type { DeadLetterReason } from '../queue/dead-letter.ts';
import type { DeliveryOutcome } from '../queue/inbox-writer.ts';
import { sourceOf } from '../queue/commit-outbox.ts';
import { isTransientResourceError } from '../fs/shortage.ts';
import { errorMessage, isHiveError } from '../errors.ts';
import type { Delivery } from '../protocol/worker.ts';
import { crashPoint } from '../testing/crash-point.ts';

function deliveryOf(agent: string, seq: number, m: HiveMessage): Delivery {
  return {
    agent,
    seq,
    id: m.id,
    from: m.from,
    to: m.to,
    act: m.act,
    subject: m.subject,
    body: m.body.length > 200 ? `${m.body.slice(0, 197)}...` : m.body,
    needs_human: m.needs_human,
    requires_reply: m.requires_reply,
    in_reply_to: m.in_reply_to,
    conversation: m.conversation,
  };
}

/**
 * One routing pass over every outbox (docs/architecture.md, "A routing pass"). Pure decisions in `decide`, effects
 * in `routeOnce`. Order of effects, and what a crash between them leaves:
 *   1. deliver every routable message, one group commit per recipient inbox
 *   2. deliver bounce notices to god (ids derived from the rejected item: idempotent)
 *   3. dead-letter rejected items (file moved with its reason)
 *   4. move routed files to outbox/.sent/
 * A crash anywhere re-runs the pass on restart; steps 1–2 find their ids already
 * delivered and report them `duplicate`, so nothing is delivered twice.
 */

export interface RouterSettings {
  /** Messages with more hops than this are dead-lettered (loop stop). */
  hopCap: number;
  /**
   * An unreadable file younger than this (ms) is left for a later pass: a person or a
   * tool writing it in place (`cat > outbox/x.json`) may not be done yet. Default 2000.
   */
  settleMs?: number;
  /** At most this many files per outbox per pass (fairness, bounded batches). */
  batchPerSender: number;
}

export const DEFAULT_ROUTER_SETTINGS: RouterSettings = { hopCap: 12, batchPerSender: 1_024, settleMs: 2_000 };

export type Decision =
  | { kind: 'route'; recipients: string[] }
  | { kind: 'reject'; reason: DeadLetterReason; bounce: boolean };

/** Where one pending item goes. Pure. */
export function decide(sender: string, item: PendingItem, dir: AgentDirectory, settings: RouterSettings): Decision {
  const source = sourceOf(sender, item.ref);
  if (!item.message) {
    return {
      kind: 'reject',
      reason: { error: item.error?.message ?? 'unreadable message', code: item.error?.code ?? 'E_BAD_MESSAGE', source },
      bounce: true,
    };
  }
  const m = item.message;
  if (m.from !== sender) {
    return {
      kind: 'reject',
      reason: {
        error: `Message says it is from "${m.from}" but sits in the outbox of "${sender}"`,
        code: 'E_BAD_MESSAGE',
        source,
      },
      bounce: true,
    };
  }
  if (m.hops > settings.hopCap) {
    return {
      kind: 'reject',
      reason: { error: `Hop cap reached: ${m.hops} hops > cap ${settings.hopCap} (a reply loop?)`, code: 'E_HOP_CAP', source, hops: m.hops },
      bounce: true,
    };
  }
  if (m.needs_human || m.to === GOD_ID || m.to === HUMAN_ALIAS) return { kind: 'route', recipients: [GOD_ID] };
  if (m.to === BROADCAST) return { kind: 'route', recipients: [...dir.broadcastable].filter((id) => id !== sender).sort() };
  if (!dir.all.has(m.to)) {
    return {
      kind: 'reject',
      reason: { error: `Unknown recipient "${m.to}": no such agent in this hive`, code: 'E_UNKNOWN_AGENT', source, to: m.to },
      bounce: true,
    };
  }
  return { kind: 'route', recipients: [m.to] };
}

/** The notice god receives about a rejected item. */
export function bounceNotice(sender: string, item: PendingItem, reason: DeadLetterReason): HiveMessage {
  const original = item.message;
  return createMessage({
    id: stableId('bounce', sender, item.ref, original?.id ?? ''),
    conversation: original?.conversation ?? stableId('conv', sender, item.ref),
    in_reply_to: original?.id ?? null,
    from: SYSTEM_SENDER,
    to: GOD_ID,
    act: 'inform',
    subject: `Undeliverable message from ${sender}`,
    body: `${reason.error}\nThe message was moved to dead-letter/ (source ${reason.source}).`,
    requires_reply: false,
  });
}

export interface RouteReport {
  /** Entries that landed in an inbox this pass. */
  delivered: Delivery[];
  duplicates: number;
  rejected: { sender: string; ref: string; reason: DeadLetterReason }[];
  /** True when some outbox had more than one batch waiting. */
  more: boolean;
  moreSenders: string[];
  /** Unreadable files left for a later pass because they were still fresh, and the senders whose outboxes held them. */
  unsettled: number;
  unsettledSenders: string[];
  /** Outboxes (or steps for one sender) that failed this pass for a reason of their own (an outbox that is a file, a `.sent` that is not a folder...): skipped, the rest routed. */
  refused: { sender: string; error: string }[];
  /**
   * Set when the pass stopped short for want of a resource (a full disk): what was done
   * stays done, the rest is left for a later pass (which finds the deliveries made here
   * and reports them `duplicate`).
   */
  shortage?: unknown;
}

export interface RouteContext {
  root: string;
  transport: Transport;
  settings: RouterSettings;
  /** Senders to scan; all agent folders when omitted. */
  senders?: Iterable<string>;
  /** Senders whose files (outbox folder, send log) need no look this pass (PendingOptions.files). */
  light?: ReadonlySet<string>;
  /** Who can receive (default: read from disk). */
  directory?: AgentDirectory;
  /** Observe each message handed to an inbox (telemetry, latency); `startedAt` is when its inbox write began (epoch ms). */
  onDelivered?: (message: HiveMessage, agent: string, seq: number, startedAt: number) => void;
  /** An inbox got new entries, durably: wake its agent now, before the rest of the pass. */
  onInboxCommitted?: (agent: string) => void;
  /** Observe each routing decision to deliver (telemetry). */
  onRouted?: (message: HiveMessage, recipients: string[]) => void;
  /** Observe each rejected item (telemetry); the message is null when it could not be read. */
  onRejected?: (message: HiveMessage | null, reason: DeadLetterReason) => void;
}

/** A recipient that cannot take messages (no inbox, or one that is not a real folder): its own problem, not the pass's. */
function isRecipientProblem(err: unknown): boolean {
  return isHiveError(err, 'E_UNKNOWN_AGENT') || isHiveError(err, 'E_NOT_REGULAR') || ['ENOTDIR', 'ENOENT', 'ELOOP'].includes((err as { code?: string }).code ?? '');
}

/** How many recipient inboxes one pass commits at once. */
const DELIVERY_CONCURRENCY = 8;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function eachConcurrently<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * Routes everything currently waiting in the given outboxes. A full disk (or another
 * shortage, see src/fs/shortage.ts) ends the pass early with `report.shortage` set, never
 * with an exception: the router waits and tries again.
 */
export async function routeOnce(ctx: RouteContext): Promise<RouteReport> {
  const report: RouteReport = { delivered: [], duplicates: 0, rejected: [], more: false, moreSenders: [], unsettled: 0, unsettledSenders: [], refused: [] };
  try {
    await routeInto(report, ctx);
  } catch (err) {
    if (!isTransientResourceError(err)) throw err;
    report.shortage = err;
  }
  return report;
}

async function routeInto(report: RouteReport, ctx: RouteContext): Promise<void> {
  const { root, transport, settings } = ctx;
  const dir = ctx.directory ?? readDirectory(root);
  const byRecipient = new Map<string, HiveMessage[]>();
  const routedRefs = new Map<string, string[]>();
  const rejects: { sender: string; item: PendingItem; reason: DeadLetterReason; bounce: boolean }[] = [];
  const routeLog: HiveEvent[] = [];
  /** Messages routed this pass; each is logged as routed to the recipients that took it fresh (a copy a recipient already had is logged as a duplicate only). */
  const decided: { message: HiveMessage; sender: string }[] = [];
  const freshTo = new Map<string, string[]>();

  // One sender's broken folder must not stop the others: its step fails alone (a full
  // disk is different: the pass stops and is tried again, see routeOnce).
  const alone = async <T>(sender: string, step: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await step();
    } catch (err) {
      if (isTransientResourceError(err)) throw err;
      report.refused.push({ sender, error: errorMessage(err) });
      return undefined;
    }
  };
  const refOf = new Map<HiveMessage, string>();
  /** A bounce notice for god: its failure (god's inbox gone) loses only the notice, logged. */
  const tellGod = async (notice: HiveMessage): Promise<void> => {
    if (!dir.all.has(GOD_ID)) return;
    try {
      const [o] = await transport.deliver(GOD_ID, [notice]);
      if (o?.status === 'delivered') report.delivered.push(deliveryOf(GOD_ID, o.seq, notice));
    } catch (err) {
      if (!isRecipientProblem(err)) throw err;
      routeLog.push({ type: 'router.bounce-failed', id: notice.id, subject: notice.subject, error: errorMessage(err) });
    }
  };

  for (const sender of ctx.senders ?? dir.senders) {
    if (!dir.senders.has(sender)) continue;
    const items = await alone(sender, () => transport.pending(sender, settings.batchPerSender, ctx.light?.has(sender) ? { files: false } : undefined));
    if (!items) continue;
    if (items.length >= settings.batchPerSender) {
      report.more = true;
      report.moreSenders.push(sender);
    }
    for (const item of items) {
      // settleMs 0: final at once (an mtime a hair ahead of Date.now() gives a negative age).
      const settleMs = settings.settleMs ?? 2_000;
      if (!item.message && settleMs > 0 && (item.ageMs ?? Infinity) < settleMs) {
        report.unsettled += 1; // still being written, probably: look again soon (at this sender)
        if (report.unsettledSenders.at(-1) !== sender) report.unsettledSenders.push(sender);
        continue;
      }
      const d = decide(sender, item, dir, settings);
      if (d.kind === 'reject') {
        rejects.push({ sender, item, reason: d.reason, bounce: d.bounce && sender !== SYSTEM_SENDER });
        continue;
      }
      for (const r of d.recipients) {
        const list = byRecipient.get(r) ?? [];
        list.push(item.message!);
        byRecipient.set(r, list);
      }
      refOf.set(item.message!, item.ref);
      const refs = routedRefs.get(sender) ?? [];
      refs.push(item.ref);
      routedRefs.set(sender, refs);
      decided.push({ message: item.message!, sender });
      ctx.onRouted?.(item.message!, d.recipients);
    }
  }

  // One group commit per recipient inbox; different inboxes commit concurrently (their
  // flushes overlap on the thread pool), a few at a time. A recipient that cannot take
  // its messages (its inbox vanished, or is not a folder) stops nothing else: its copies
  // go to dead-letter with a bounce. A full disk is different: the pass fails as a whole
  // and is re-run once there is room (deliveries are idempotent on id).
  const undeliverable: { recipient: string; messages: HiveMessage[]; error: unknown }[] = [];
  await eachConcurrently([...byRecipient], DELIVERY_CONCURRENCY, async ([recipient, messages]) => {
    const startedAt = performance.timeOrigin + performance.now();
    let outcomes: DeliveryOutcome[];
    try {
      outcomes = await transport.deliver(recipient, messages, { alone: byRecipient.size === 1 });
    } catch (err) {
      if (!isRecipientProblem(err)) throw err; // anything else is a bug or a full disk: let it crash or wait
      undeliverable.push({ recipient, messages, error: err });
      return;
    }
    let fresh = 0;
    outcomes.forEach((o, i) => {
      if (o.status === 'delivered') {
        fresh += 1;
        freshTo.set(messages[i]!.id, [...(freshTo.get(messages[i]!.id) ?? []), recipient]);
        report.delivered.push(deliveryOf(recipient, o.seq, messages[i]!));
        ctx.onDelivered?.(messages[i]!, recipient, o.seq, startedAt);
      } else {
        report.duplicates += 1;
        routeLog.push({ type: 'message.duplicate', id: messages[i]!.id, to: recipient });
      }
    });
    if (fresh > 0) ctx.onInboxCommitted?.(recipient);
  });

  for (const { message, sender } of decided) {
    const to = freshTo.get(message.id);
    if (to) routeLog.push({ type: 'message.routed', id: message.id, from: sender, to: message.to, recipients: to.sort() });
  }
  if (byRecipient.size > 0) crashPoint('route.after-deliveries');
  for (const u of undeliverable) {
    const code = (u.error as { code?: string }).code ?? 'E_IO';
    for (const m of u.messages) {
      const reason: DeadLetterReason = {
        error: `Cannot deliver to "${u.recipient}": ${errorMessage(u.error)}`,
        code,
        source: sourceOf(m.from, refOf.get(m) ?? `${m.id}.json`),
        to: u.recipient,
      };
      const key = `undeliverable-${u.recipient}-${m.id}.json`;
      await transport.deadLetterCopy(m, key, reason);
      if (m.from !== SYSTEM_SENDER && u.recipient !== GOD_ID) await tellGod(bounceNotice(m.from, { ref: key, message: m, error: null }, reason));
      ctx.onRejected?.(m, reason);
      report.rejected.push({ sender: m.from, ref: key, reason });
    }
  }

  for (const r of rejects) {
    if (r.bounce) await tellGod(bounceNotice(r.sender, r.item, r.reason));
    const moved = await alone(r.sender, async () => {
      await transport.reject(r.sender, r.item.ref, r.reason);
      return true;
    });
    if (!moved) continue;
    ctx.onRejected?.(r.item.message ?? null, r.reason);
    report.rejected.push({ sender: r.sender, ref: r.item.ref, reason: r.reason });
  }

  if (routedRefs.size > 0) crashPoint('route.before-settle');
  for (const [sender, refs] of routedRefs) await alone(sender, () => transport.settle(sender, refs));
  appendEvents(root, routeLog);
}
