import { HiveError, isHiveError } from '../errors.ts';
import { listenJsonLine, requestJsonLine } from '../net/json-line.ts';
import { publishSocketPath, resolveSocketPath, socketPathFor } from '../net/socket-path.ts';
import type { HiveMessageInput } from '../protocol/message.ts';
import type { Supervisor } from './supervisor.ts';

/**
 * The control socket `<root>/control.sock` (mode 0600): how `hive status`, `hive spawn`
 * and `hive stop` reach a running supervisor. One JSON request per connection.
 */

export type ControlRequest =
  | { op: 'ping' }
  | { op: 'status' }
  | { op: 'spawn'; spec: unknown }
  | { op: 'stop'; id: string }
  | { op: 'send'; message: HiveMessageInput };

export interface ControlServer {
  close(): Promise<void>;
}

export const CONTROL_SOCKET = 'control.sock';

export async function startControlServer(root: string, supervisor: Supervisor): Promise<ControlServer> {
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
        default:
          throw new HiveError('E_BAD_ARGS', `Unknown control op ${JSON.stringify((raw as { op?: unknown })?.op)}`);
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
