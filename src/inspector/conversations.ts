import { hivePaths } from '../layout/paths.ts';
import { listDir } from '../fs/atomic.ts';
import { isAgentId, GOD_ID } from '../protocol/agent-id.ts';
import type { InboxRow } from '../queue/inbox.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { currentSessionFile, isSessionKey, sessionPaths } from '../session/paths.ts';
import { readJsonl } from '../session/journal.ts';
import type { TranscriptEvent } from '../session/types.ts';

/**
 * What the inspector reads of the messages a hive holds, from disk only (so it survives
 * restarts): every agent's inbox log, as far as its compaction keeps it. One message
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
  /**
   * Where it was delivered: the recipient, its inbox seq, whether that agent handled it, and
   * from the event log (as far as its current file reaches) when it was delivered and the
   * turn that handled it: when it committed, how long the brain thought, what it sent.
   */
  deliveries: {
    agent: string;
    seq: number;
    handled: boolean;
    deliveredAt?: string;
    turn?: { at: string; cursor: number; thinkMs: number; handled: string[]; sent: string[] };
  }[];
}

/** Delivery times and the turns that handled each message, from log.jsonl (rotated files are not read). */
function timelineOf(root: string): { deliveredAt: Map<string, string>; turns: Map<string, { at: string; cursor: number; thinkMs: number; handled: string[]; sent: string[] }> } {
  const deliveredAt = new Map<string, string>();
  const turns = new Map<string, { at: string; cursor: number; thinkMs: number; handled: string[]; sent: string[] }>();
  let text = '';
  try {
    text = readRegularFile(hivePaths(root).log, 'utf8');
  } catch {
    return { deliveredAt, turns };
  }
  for (const line of text.split('\n')) {
    if (!line.includes('"message.routed"') && !line.includes('"actor.turn"')) continue;
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const at = String(e.at ?? '');
    if (e.type === 'message.routed' && Array.isArray(e.recipients)) {
      for (const r of e.recipients) if (!deliveredAt.has(`${r}\0${e.id}`)) deliveredAt.set(`${r}\0${e.id}`, at);
    } else if (e.type === 'actor.turn' && Array.isArray(e.handled)) {
      const turn = { at, cursor: Number(e.cursor), thinkMs: Number(e.think_ms), handled: e.handled.map(String), sent: Array.isArray(e.sent) ? e.sent.map(String) : [] };
      for (const id of turn.handled) turns.set(`${e.agent}\0${id}`, turn);
    }
  }
  return { deliveredAt, turns };
}

/**
 * Where the inspector reads an agent's inbox: through a transport (`inboxRows`), the
 * folder's on one machine, JetStream's in cluster mode (every machine's agents:
 * `src/queue/tool-transport.ts`). Each row is done once the agent's committed cursor passed it.
 */
export type InboxSource = (agent: string) => Promise<InboxRow[]>;

/** Every message delivered (to `agents` only, when given), oldest first (by creation time, then id). */
export async function deliveredMessages(root: string, agents: string[] | undefined, inboxes: InboxSource): Promise<MessageRow[]> {
  const rows = new Map<string, MessageRow>();
  for (const agent of agents ?? listDir(hivePaths(root).agents).filter(isAgentId)) {
    let entries: InboxRow[];
    try {
      entries = await inboxes(agent);
    } catch {
      continue; // not a readable agent folder, or an agent the cluster has no inbox for
    }
    for (const e of entries) {
      const m: HiveMessage | null = e.message;
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
      row.deliveries.push({ agent, seq: e.seq, handled: e.done });
      rows.set(m.id, row);
    }
  }
  return [...rows.values()].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** One conversation, every message in order with its full body, when each was delivered and the turn that handled it. */
export async function conversationOf(root: string, conversation: string, inboxes: InboxSource): Promise<MessageRow[]> {
  const rows = (await deliveredMessages(root, undefined, inboxes)).filter((m) => m.conversation === conversation);
  const { deliveredAt, turns } = timelineOf(root);
  for (const m of rows) {
    for (const d of m.deliveries) {
      const at = deliveredAt.get(`${d.agent}\0${m.id}`);
      if (at) d.deliveredAt = at;
      const turn = turns.get(`${d.agent}\0${m.id}`);
      if (turn) d.turn = turn;
    }
  }
  return rows;
}

/** Messages whose id, conversation, subject or body holds `query` (case-insensitive), newest first. */
export async function searchMessages(root: string, query: string, limit: number, inboxes: InboxSource): Promise<MessageRow[]> {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  return (await deliveredMessages(root, undefined, inboxes))
    .filter((m) => [m.id, m.conversation, m.subject, m.body, m.from, m.to].some((f) => f.toLowerCase().includes(q)))
    .reverse()
    .slice(0, limit);
}

/** God's inbox, newest first: the results and notices the people were sent. */
export async function godInbox(root: string, limit: number, inboxes: InboxSource): Promise<MessageRow[]> {
  return (await deliveredMessages(root, [GOD_ID], inboxes))
    .reverse()
    .slice(0, limit);
}

/**
 * An agent's recent turns as its session transcript records them (read only: nothing is
 * created for an agent without a session): each input, then what the brain did for it —
 * the prompt's size, the process or request, stderr, the output, errors, how a restart
 * restored the conversation. Newest turn last; at most `turns` of them.
 */
export function agentTurns(root: string, agentId: string, turns = 10): { session: string | null; turns: TranscriptEvent[][] } {
  if (!isAgentId(agentId)) return { session: null, turns: [] };
  let key: string | null = null;
  try {
    key = readJsonFile<{ key?: string }>(currentSessionFile(root, agentId))?.key ?? null;
  } catch {
    key = null;
  }
  if (!key || !isSessionKey(key)) return { session: null, turns: [] };
  let events: TranscriptEvent[];
  try {
    events = readJsonl<TranscriptEvent>(sessionPaths(root, agentId, key).transcript);
  } catch {
    events = [];
  }
  const grouped: TranscriptEvent[][] = [];
  for (const e of events) {
    if (e.kind === 'input' || grouped.length === 0) grouped.push([]);
    grouped.at(-1)!.push(e);
  }
  return { session: key, turns: grouped.slice(-turns) };
}
