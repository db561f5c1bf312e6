import { hivePaths } from '../layout/paths.ts';
import { listDir } from '../fs/atomic.ts';
import { isAgentId, GOD_ID } from '../protocol/agent-id.ts';
import { listInbox, readInboxEntry } from '../queue/inbox.ts';
import { committedCursor } from '../queue/committed-cursor.ts';
import type { HiveMessage } from '../protocol/message.ts';

/**
 * What the inspector reads of the messages a hive holds, from disk only (so it survives
 * restarts): every agent's inbox and `.done/`, as far as their caps keep them. One message
 * delivered to several agents (a broadcast) is one row with a delivery per recipient.
 */
export interface MessageRow {
  id: string;
  conversation: string;
  from: string;
  to: string;
  act: string;
  subject: string;
  body: string;
  created_at: string;
  in_reply_to: string | null;
  needs_human: boolean;
  /** Where it was delivered: the recipient, its inbox seq, and whether that agent handled it. */
  deliveries: { agent: string; seq: number; handled: boolean }[];
}

/** Every delivered message, oldest first (by creation time, then id). */
export function deliveredMessages(root: string): MessageRow[] {
  const rows = new Map<string, MessageRow>();
  for (const agent of listDir(hivePaths(root).agents).filter(isAgentId)) {
    let entries: ReturnType<typeof listInbox>;
    try {
      entries = listInbox(root, agent);
    } catch {
      continue; // not a readable agent folder
    }
    const cursor = committedCursor(root, agent);
    for (const e of entries) {
      const m: HiveMessage | null = readInboxEntry(root, agent, e.name);
      if (!m) continue;
      const row = rows.get(m.id) ?? {
        id: m.id,
        conversation: m.conversation,
        from: m.from,
        to: m.to,
        act: m.act,
        subject: m.subject,
        body: m.body,
        created_at: m.created_at,
        in_reply_to: m.in_reply_to,
        needs_human: m.needs_human,
        deliveries: [],
      };
      row.deliveries.push({ agent, seq: e.seq, handled: e.done || e.seq <= cursor });
      rows.set(m.id, row);
    }
  }
  return [...rows.values()].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** One conversation, every message in order with its full body. */
export function conversationOf(root: string, conversation: string): MessageRow[] {
  return deliveredMessages(root).filter((m) => m.conversation === conversation);
}

/** Messages whose id, conversation, subject or body holds `query` (case-insensitive), newest first. */
export function searchMessages(root: string, query: string, limit = 50): MessageRow[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  return deliveredMessages(root)
    .filter((m) => [m.id, m.conversation, m.subject, m.body, m.from, m.to].some((f) => f.toLowerCase().includes(q)))
    .reverse()
    .slice(0, limit);
}

/** God's inbox, newest first: the results and notices the people were sent. */
export function godInbox(root: string, limit = 50): MessageRow[] {
  return deliveredMessages(root)
    .filter((m) => m.deliveries.some((d) => d.agent === GOD_ID))
    .reverse()
    .slice(0, limit);
}
