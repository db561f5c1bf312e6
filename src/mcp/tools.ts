import fs from 'node:fs';
import { HiveError } from '../errors.ts';
import { ACTS, parseMessage, type Act, type HiveMessage } from '../protocol/message.ts';
import { GOD_ID, isAgentId } from '../protocol/agent-id.ts';
import { agentPaths } from '../layout/paths.ts';
import { requireHive } from '../layout/ensure.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { externalInbox, type ExternalInbox } from '../queue/external-inbox.ts';
import { readRegistry } from '../registry/registry.ts';
import { PASSIVE_KINDS } from '../brains/create.ts';
import { runGetMemory } from '../memory/tool.ts';
import { remember } from '../memory/remember.ts';
import { appendEvent } from '../log/event-log.ts';
import { isAgentToken } from '../hooks/agent-token.ts';

/**
 * What `hive mcp` does for one agent, without the protocol: every tool is a plain function
 * over the hive folder (so it works with or without a running supervisor, as `hive send`
 * does), scoped to the agent it was started for. docs/architecture.md, "Agent CLIs over MCP".
 */

export interface McpScope {
  root: string;
  agent: string;
  /** Its inbox: the folder's, or the cluster's in cluster mode (src/queue/external-inbox.ts). */
  inbox: ExternalInbox;
}

/** Checks the hive, the agent and its token (HMAC of hive.key: the hooks socket's rule). */
export function openScope(root: string, agent: string, token: string | undefined): McpScope {
  requireHive(root);
  if (!isAgentId(agent)) throw new HiveError('E_BAD_AGENT_ID', `Expected an agent id for hive mcp (AGENT_ID or --agent), got ${JSON.stringify(agent)}`);
  if (!fs.existsSync(agentPaths(root, agent).dir)) throw new HiveError('E_UNKNOWN_AGENT', `Agent "${agent}" does not exist in ${root}; spawn it first`);
  if (token === undefined) throw new HiveError('E_BAD_ARGS', `hive mcp for "${agent}" needs its token in HIVE_AGENT_TOKEN (Hive sets it for the agents it starts; \`hive token ${agent}\` prints it)`);
  if (!isAgentToken(root, agent, token)) throw new HiveError('E_BAD_ARGS', `HIVE_AGENT_TOKEN is not the token of agent "${agent}": refused`);
  return { root, agent, inbox: externalInbox(root) };
}

/** Optional fields may come as undefined (what a schema-checked tool call hands over). */
type Maybe<T> = { [K in keyof T]: T[K] | undefined };

export type SendInput = {
  to: string;
  act?: Act | undefined;
  body: string;
} & Partial<Maybe<{ subject: string; needs_human: boolean; in_reply_to: string; conversation: string }>>

/** The message of this agent's inbox (live or done) with this id, or null. */
function received(s: McpScope, id: string): Promise<HiveMessage | null> {
  return s.inbox.find(s.agent, id);
}

/**
 * A message from the scope's agent, validated as every HiveMessage is, written durably to
 * its outbox. A reply (`in_reply_to` a message this agent received) joins that message's
 * conversation and counts one hop more, as a brain's reply does: the router's hop cap stops
 * a reply loop between agents talking over MCP too.
 */
export async function sendMessage(s: McpScope, input: SendInput): Promise<{ id: string; conversation: string }> {
  const fields: Record<string, unknown> = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const parent = input.in_reply_to ? await received(s, input.in_reply_to) : null;
  if (parent) {
    fields.conversation ??= parent.conversation;
    fields.hops = parent.hops + 1;
    if (parent.traceparent) fields.traceparent = parent.traceparent;
  }
  const parsed = parseMessage({ ...fields, act: input.act ?? 'inform', from: s.agent });
  if (!parsed.ok) throw parsed.error;
  writeOutbox(s.root, [parsed.message]);
  appendEvent(s.root, { type: 'mcp.sent', agent: s.agent, id: parsed.message.id, to: parsed.message.to });
  return { id: parsed.message.id, conversation: parsed.message.conversation };
}

/** A question for the people in the loop: a `query` to god with needs_human; the answer arrives as a message. */
export function askHuman(s: McpScope, input: { body: string; subject?: string | undefined; conversation?: string | undefined }): Promise<{ id: string; conversation: string }> {
  return sendMessage(s, { to: GOD_ID, act: 'query', needs_human: true, ...input });
}

function refuseOther(s: McpScope, agent: string | undefined): void {
  if (agent !== undefined && agent !== s.agent) {
    throw new HiveError('E_BAD_ARGS', `This MCP server is scoped to agent "${s.agent}": the inbox of "${agent}" is not yours to read`);
  }
}

export interface InboxView {
  cursor: number;
  messages: { seq: number; ack: string; message: HiveMessage }[];
}

/** The agent's unprocessed messages, in order (none is marked handled; for an agent without an actor, repeated copies with nothing after them are passed). */
export async function checkInbox(s: McpScope, input: { limit?: number | undefined; agent?: string | undefined } = {}): Promise<InboxView> {
  refuseOther(s, input.agent);
  const cursor = await s.inbox.cursor(s.agent);
  const entries = await s.inbox.unread(s.agent, input.limit ?? 20, { passRepeats: isPassive(s) });
  return { cursor, messages: entries.map((e) => ({ seq: e.seq, ack: `${s.agent}:${e.seq}`, message: e.message })) };
}

/** The next unprocessed message (or null) and the token that acknowledges it. */
export async function nextMessage(s: McpScope): Promise<InboxView['messages'][number] | null> {
  return (await checkInbox(s, { limit: 1 })).messages[0] ?? null;
}

function isPassive(s: McpScope): boolean {
  const brain = readRegistry(s.root).agents[s.agent]?.brain as { kind?: string } | undefined;
  return brain?.kind === undefined || PASSIVE_KINDS.has(brain.kind);
}

/**
 * Moves the cursor to `seq` (the message is handled): only for an agent no actor of Hive's
 * runs (its own actor's cursor moves with its committed turns), only forward, never past
 * what the inbox holds. The same rule as the hooks socket's acks.
 */
export async function ack(s: McpScope, input: { seq: number }): Promise<{ cursor: number }> {
  if (!isPassive(s)) throw new HiveError('E_CONFLICT', `Agent "${s.agent}" is run by its own actor: its cursor moves with its committed turns, not with ack (seq ${input.seq} not acknowledged)`);
  const r = await s.inbox.acknowledgeThrough(s.agent, input.seq);
  if ('beyond' in r) throw new HiveError('E_BAD_ARGS', `Expected seq to be a delivered message's (at most ${r.beyond}), got ${input.seq}`);
  if (!r.moved) return { cursor: r.cursor };
  appendEvent(s.root, { type: 'mcp.acknowledged', agent: s.agent, cursor: input.seq });
  return { cursor: input.seq };
}

export function getMemory(s: McpScope, input: { query: string; agent?: string | undefined; limit?: number | undefined }) {
  return runGetMemory(s.root, Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
}

/** A durable memory.md entry of the scope's agent. */
export async function rememberEntry(s: McpScope, input: { body: string; title?: string | undefined }) {
  const r = await remember(s.root, s.agent, input.title ? { title: input.title, body: input.body } : input.body);
  return r;
}

/** Every agent of the hive: id, name, role, brain kind and registry status. */
export function listAgents(s: McpScope): { id: string; name: string; role: string; brain: string; status: string }[] {
  return Object.values(readRegistry(s.root).agents)
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((a) => ({ id: a.id, name: a.name, role: a.role, brain: String((a.brain as { kind?: string } | undefined)?.kind ?? '?'), status: a.status }));
}

export { ACTS };
