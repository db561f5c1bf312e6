import { HiveError, isHiveError } from '../errors.ts';
import { listenJsonLine, requestJsonLine } from '../net/json-line.ts';
import { publishSocketPath, resolveSocketPath, socketPathFor } from '../net/socket-path.ts';
import type { HiveMessageInput } from '../protocol/message.ts';
import type { Question } from '../human/questions.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { RegistryEntry } from '../registry/registry.ts';
import type { ActorStatus } from './status.ts';
import { importSnapshot } from '../session/snapshots.ts';
import { runSessionAction, type SessionAction } from '../session/actions.ts';

/**
 * The control socket `<root>/control.sock` (mode 0600): how `hive status`, `hive spawn`
 * and `hive stop` reach a running supervisor. One JSON request per connection.
 */

export type ControlRequest =
  | { op: 'ping' }
  | { op: 'status' }
  | { op: 'spawn'; spec: unknown }
  | { op: 'stop'; id: string }
  | { op: 'send'; message: HiveMessageInput }
  | { op: 'questions'; open?: boolean }
  | { op: 'answer'; question: string; body: string; again?: boolean }
  | { op: 'session'; agent: string; action: SessionAction; key?: string; name?: string }
  | { op: 'import'; name: string; into: string }
  | { op: 'kick'; senders?: string[] }
  /** Only on a hive started with the fault ops of src/testing/fault-ops.ts (`hive chaos`). */
  | { op: 'crash'; agent: string };

/** What the control socket needs of a running supervisor. */
export interface ControlTarget {
  status(): ActorStatus[];
  spawn(spec: unknown): Promise<RegistryEntry>;
  stop(id: string): Promise<void>;
  send(message: HiveMessageInput): Promise<HiveMessage>;
  questions(options: { open?: boolean }): Question[];
  answer(question: string, body: string, options: { again?: boolean }): HiveMessage;
  withAgentPaused<T>(agentId: string, fn: () => Promise<T> | T): Promise<T>;
  kickRouter(senders?: string[]): void;
}

/** Extra ops a hive is started with (fault injection for `hive chaos`): op name → handler. */
export type ControlOps = Record<string, (request: Record<string, unknown>) => Promise<unknown>>;

export interface ControlServer {
  close(): Promise<void>;
}

export const CONTROL_SOCKET = 'control.sock';

export async function startControlServer(root: string, supervisor: ControlTarget, extra: ControlOps = {}): Promise<ControlServer> {
  const socketPath = socketPathFor(root, CONTROL_SOCKET);
  const server = await listenJsonLine(socketPath, {
    maxBytes: 1 << 20,
    async handle(raw) {
      const req = raw as ControlRequest;
      switch (req?.op) {
        case 'ping':
          return { ok: true, pid: process.pid, root };
        case 'status':
          return { ok: true, actors: supervisor.status() };
        case 'spawn':
          return { ok: true, agent: await supervisor.spawn(req.spec) };
        case 'stop':
          await supervisor.stop(req.id);
          return { ok: true };
        case 'send':
          return { ok: true, id: (await supervisor.send(req.message)).id };
        case 'questions':
          return { ok: true, questions: supervisor.questions({ open: req.open ?? true }) };
        case 'answer':
          return { ok: true, id: supervisor.answer(req.question, req.body, { again: req.again ?? false }).id };
        case 'session':
          return { ok: true, result: await runSessionAction(root, req.agent, req.action, req, supervisor) };
        case 'kick':
          supervisor.kickRouter(Array.isArray(req.senders) ? req.senders.filter((s): s is string => typeof s === 'string') : undefined);
          return { ok: true };
        case 'import':
          return { ok: true, result: await supervisor.withAgentPaused(req.into, () => importSnapshot(root, req.name, req.into)) };
        default: {
          const op = (raw as { op?: unknown })?.op;
          const handler = typeof op === 'string' && Object.hasOwn(extra, op) ? extra[op] : undefined;
          if (handler) return { ok: true, result: await handler(raw as Record<string, unknown>) };
          throw new HiveError('E_BAD_ARGS', `Unknown control op ${JSON.stringify(op)}`);
        }
      }
    },
  });
  publishSocketPath(root, CONTROL_SOCKET, socketPath);
  return server;
}

/** Sends a control request to the supervisor running on `root`. Throws its error as a HiveError. */
export async function controlRequest<T = Record<string, unknown>>(root: string, request: ControlRequest, timeoutMs = 30_000): Promise<T> {
  const answer = (await requestJsonLine(resolveSocketPath(root, CONTROL_SOCKET), request, timeoutMs)) as {
    ok: boolean;
    error?: { code: string; message: string };
  };
  if (!answer.ok) {
    const code = answer.error?.code;
    throw new HiveError(code && isHiveError({ code }) ? (code as never) : 'E_IO', answer.error?.message ?? 'control request failed');
  }
  return answer as T;
}
