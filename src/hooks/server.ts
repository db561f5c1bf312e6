import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { listenJsonLine, type JsonLineServer } from '../net/json-line.ts';
import { publishSocketPath, socketPathFor } from '../net/socket-path.ts';
import { externalInbox, type ExternalInbox } from '../queue/external-inbox.ts';
import { describeInput } from '../brains/prompt.ts';
import { currentSession } from '../session/session.ts';
import { sessionPaths } from '../session/paths.ts';
import { JsonlJournal } from '../session/journal.ts';
import { evaluateToolPolicy, type DenyRule } from './policy.ts';
import { HOOKS_SOCKET } from './socket-name.ts';
import { AGENT_TOKEN_ENV, ensureHiveKey, isAgentToken } from './agent-token.ts';
import { pendingAck, setPendingAck } from './pending-ack.ts';

/**
 * The hooks socket `<root>/hooks.sock` (mode 0600, HIVE_SOCK for agent CLIs). One
 * newline-terminated JSON event per connection, answered with one JSON object.
 * Field names follow munder-difflin (and Claude Code's hooks): `hook_event_name`,
 * `agent_id`, `session_id`, `tool_name`, `tool_input`, ...
 *
 * Every event goes into the agent's session transcript and `log.jsonl`. `PreToolUse` is
 * checked against the operator's deny rules. `Stop` hands a passive (externally run)
 * agent its unprocessed inbox messages as extra context (`decision: "block"` with the
 * messages as the reason, so the CLI keeps going) and an `ack` token; the cursor moves
 * only when that token comes back (an `Ack` event, or any later event carrying `ack`).
 * An unknown agent, malformed JSON or an oversized line gets an error answer and the
 * connection is closed; nothing else is affected.
 *
 * Every event must carry the agent's `agent_token` (src/hooks/agent-token.ts): without
 * it any process that can reach the socket could act as any agent. A missing or wrong
 * token is an error answer with nothing done; the token is never journaled.
 */

export { HOOKS_SOCKET };
export const HOOK_EVENTS = ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'Notification', 'Ack'] as const;

export interface HooksOptions {
  maxLineBytes: number;
  deny: DenyRule[];
  /** The transcript line cap (sessions.transcriptLines): hook events count against it. */
  transcriptLines: number;
  /** Agents whose inbox is drained through Stop (no actor of their own). */
  isPassive(agentId: string): boolean;
  /** Called after a passive agent's cursor moved (status refresh). */
  onAck?(agentId: string, cursor: number): void;
}

interface HookEvent {
  hook_event_name: (typeof HOOK_EVENTS)[number];
  agent_id: string;
  session_id?: string;
  tool_name?: string;
  tool_input?: unknown;
  ack?: string;
  stop_hook_active?: boolean;
  [key: string]: unknown;
}

function fail(code: 'E_HOOK' | 'E_UNKNOWN_AGENT', message: string): never {
  throw new HiveError(code, message);
}

function validate(root: string, raw: unknown): HookEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('E_HOOK', 'Expected a JSON object with hook_event_name and agent_id');
  const e = raw as Record<string, unknown>;
  if (!(HOOK_EVENTS as readonly unknown[]).includes(e.hook_event_name)) {
    fail('E_HOOK', `Expected hook_event_name to be one of ${HOOK_EVENTS.join(', ')}, got ${JSON.stringify(e.hook_event_name)}`);
  }
  if (!isAgentId(e.agent_id)) fail('E_HOOK', `Expected agent_id to be an agent id, got ${JSON.stringify(e.agent_id)}`);
  // The token first: a caller without one learns nothing, not even which agents exist.
  if (e.agent_token === undefined) {
    fail('E_HOOK', `The event for agent "${e.agent_id}" has no agent_token: run the hook with ${AGENT_TOKEN_ENV} set (Hive sets it for the agents it starts; \`hive token ${e.agent_id}\` prints it). Nothing was done`);
  }
  if (!isAgentToken(root, e.agent_id, e.agent_token)) fail('E_HOOK', `The agent_token is not the token of agent "${e.agent_id}": refused, nothing was done`);
  if (!fs.existsSync(agentPaths(root, e.agent_id).dir)) fail('E_UNKNOWN_AGENT', `Unknown agent ${JSON.stringify(e.agent_id)}`);
  const { agent_token: _secret, ...event } = e; // never journaled or logged
  return event as HookEvent;
}

/** Hook events join the agent's transcript through a capped journal (the cap holds for them too). */
function journal(root: string, e: HookEvent, answer: unknown, journals: Map<string, JsonlJournal<unknown>>, cap: number): void {
  try {
    const file = sessionPaths(root, e.agent_id, currentSession(root, e.agent_id).key).transcript;
    let j = journals.get(file);
    if (!j) {
      if (journals.size >= 256) journals.clear();
      j = new JsonlJournal(file, cap);
      journals.set(file, j);
    }
    j.append([{ at: new Date().toISOString(), kind: 'hook', event: e, answer }]);
  } catch {
    // the log line below still records it
  }
  appendEvent(root, { type: `hook.${e.hook_event_name}`, agent: e.agent_id, session: e.session_id ?? null, tool: e.tool_name ?? null });
}

/**
 * Moves a passive agent's cursor to the seq an ack token names. Refused (an error answer,
 * nothing moved) for an agent run by its own actor — its cursor moves with its committed
 * turns, and moving it from outside would skip messages it never handled — and for a seq
 * beyond what is in the inbox.
 */
async function acknowledge(root: string, agentId: string, token: string, options: HooksOptions, inbox: ExternalInbox): Promise<number> {
  const m = /^([a-z0-9][a-z0-9._-]{0,63}):(\d+)$/.exec(token);
  if (!m) fail('E_HOOK', `Expected ack to look like "<agent>:<seq>" (as a Stop answer gives it), got ${JSON.stringify(token)}`);
  if (m[1] !== agentId) fail('E_HOOK', `The ack ${JSON.stringify(token)} belongs to agent "${m[1]}", not to "${agentId}" who sent it`);
  if (!options.isPassive(agentId)) {
    fail('E_HOOK', `Agent "${agentId}" is run by its own actor: its cursor moves with its turns, not with hook acks (ack ${JSON.stringify(token)} ignored)`);
  }
  const seq = Number(m[2]);
  const r = await inbox.acknowledgeThrough(agentId, seq);
  if ('beyond' in r) fail('E_HOOK', `The ack ${JSON.stringify(token)} names seq ${seq}, but the inbox of "${agentId}" ends at seq ${r.beyond}`);
  if (!r.moved) return seq;
  options.onAck?.(agentId, seq);
  appendEvent(root, { type: 'hook.acknowledged', agent: agentId, cursor: seq });
  return seq;
}

async function answerFor(root: string, e: HookEvent, options: HooksOptions, inbox: ExternalInbox): Promise<Record<string, unknown>> {
  if (typeof e.ack === 'string') await acknowledge(root, e.agent_id, e.ack, options, inbox);
  switch (e.hook_event_name) {
    case 'PreToolUse': {
      const verdict = evaluateToolPolicy(options.deny, e.agent_id, String(e.tool_name ?? ''), e.tool_input);
      if (verdict.allow) return { ok: true, decision: 'allow' };
      // `hookSpecificOutput` is what Claude Code reads from a PreToolUse hook (its `decision`
      // field knows no "deny"); an allow says nothing to it, so its own permissions still apply.
      return {
        ok: true,
        decision: 'deny',
        reason: verdict.reason,
        hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: verdict.reason },
      };
    }
    case 'Ack':
      return { ok: true, cursor: typeof e.ack === 'string' ? await inbox.cursor(e.agent_id) : null };
    case 'Stop': {
      if (!options.isPassive(e.agent_id)) return { ok: true };
      const previous = pendingAck(root, e.agent_id);
      if (e.stop_hook_active && previous) await acknowledge(root, e.agent_id, previous, options, inbox);
      const entries = await inbox.unread(e.agent_id, 50, { passRepeats: true }); // passive: checked above
      if (entries.length === 0) {
        if (previous) setPendingAck(root, e.agent_id, null);
        return { ok: true };
      }
      const ack = `${e.agent_id}:${entries.at(-1)!.seq}`;
      if (ack !== previous) setPendingAck(root, e.agent_id, ack);
      const text = entries.map((x) => describeInput({ kind: 'message', seq: x.seq, message: x.message })).join('\n\n');
      return {
        ok: true,
        decision: 'block',
        reason: `You have ${entries.length} new message(s) in the hive:\n\n${text}`,
        messages: entries.map((x) => x.message),
        ack,
      };
    }
    default:
      return { ok: true };
  }
}

/** Starts the hooks socket for a hive; the supervisor owns it. */
export async function startHooksServer(root: string, options: HooksOptions): Promise<JsonLineServer> {
  ensureHiveKey(root);
  const socketPath = socketPathFor(root, HOOKS_SOCKET);
  const journals = new Map<string, JsonlJournal<unknown>>();
  // A passive agent's inbox: the folder's, or in cluster mode the cluster's.
  const inbox = externalInbox(root);
  const server = await listenJsonLine(socketPath, {
    maxBytes: options.maxLineBytes,
    onBadLine: (error) => appendEvent(root, { type: 'hook.rejected', error }),
    async handle(raw) {
      let e: HookEvent;
      try {
        e = validate(root, raw);
      } catch (err) {
        appendEvent(root, { type: 'hook.rejected', error: (err as Error).message });
        throw err;
      }
      let answer: Record<string, unknown>;
      try {
        answer = await answerFor(root, e, options, inbox);
      } catch (err) {
        appendEvent(root, { type: 'hook.rejected', agent: e.agent_id, event: e.hook_event_name, error: (err as Error).message });
        throw err;
      }
      journal(root, e, answer, journals, options.transcriptLines);
      return answer;
    },
  });
  publishSocketPath(root, HOOKS_SOCKET, socketPath);
  return {
    path: server.path,
    async close() {
      inbox.close();
      await server.close();
    },
  };
}
