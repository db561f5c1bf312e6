import fs from 'node:fs';
import net from 'node:net';
import { HiveError } from '../errors.ts';

/**
 * One-request-per-connection JSON line protocol, used by the control socket and the
 * hooks socket: the client writes one JSON object and a newline, the server answers
 * with one JSON object and a newline and closes.
 */

export interface JsonLineServer {
  path: string;
  close(): Promise<void>;
}

export interface JsonLineOptions {
  /** Longest accepted request line in bytes. */
  maxBytes: number;
  /** Called for each parsed request; its result (or thrown error) is the answer. */
  handle(request: unknown): Promise<unknown>;
  /** Answer for lines that are not JSON or too long. */
  onBadLine?(error: string): void;
}

/**
 * Connections the kernel queues before they are accepted (capped by net.core.somaxconn).
 * Node's default, 511, is too few for a burst of hooks: a team of agent CLIs firing their
 * hooks at once got EAGAIN for the connections beyond it.
 */
export const LISTEN_BACKLOG = 4_096;

/** Listens on a Unix socket with file mode 0600 (owner only). */
export async function listenJsonLine(socketPath: string, options: JsonLineOptions): Promise<JsonLineServer> {
  fs.rmSync(socketPath, { force: true });
  const server = net.createServer((conn) => {
    let buf = Buffer.alloc(0);
    let answered = false;
    const answer = (value: unknown) => {
      if (answered) return;
      answered = true;
      conn.end(`${JSON.stringify(value)}\n`);
    };
    conn.setTimeout(10_000, () => conn.destroy());
    conn.on('error', () => undefined);
    conn.on('data', (chunk: Buffer) => {
      if (answered) return;
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(10);
      if (nl < 0 && buf.length > options.maxBytes) {
        options.onBadLine?.(`request line longer than ${options.maxBytes} bytes`);
        answer({ ok: false, error: { code: 'E_HOOK', message: `Request line longer than ${options.maxBytes} bytes` } });
        return;
      }
      if (nl < 0) return;
      if (nl > options.maxBytes) {
        options.onBadLine?.(`request line longer than ${options.maxBytes} bytes`);
        answer({ ok: false, error: { code: 'E_HOOK', message: `Request line longer than ${options.maxBytes} bytes` } });
        return;
      }
      let request: unknown;
      try {
        request = JSON.parse(buf.subarray(0, nl).toString('utf8'));
      } catch (err) {
        options.onBadLine?.(`malformed JSON: ${(err as Error).message}`);
        answer({ ok: false, error: { code: 'E_HOOK', message: `Malformed JSON: ${(err as Error).message}` } });
        return;
      }
      options.handle(request).then(
        (value) => answer(value),
        (err) => answer({ ok: false, error: { code: (err as { code?: string }).code ?? 'E_IO', message: (err as Error).message ?? String(err) } }),
      );
    });
  });
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ path: socketPath, backlog: LISTEN_BACKLOG }, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  // chmod follows a symlink: only the socket this server made is changed (a link swapped in
  // since the listen would have had its target's mode changed).
  if (fs.lstatSync(socketPath, { throwIfNoEntry: false })?.isSocket()) fs.chmodSync(socketPath, 0o600);
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        fs.rmSync(socketPath, { force: true });
      }),
  };
}

/** Sends one request and returns the parsed answer. */
export function requestJsonLine(socketPath: string, request: unknown, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socketPath);
    let buf = '';
    const timer = setTimeout(() => {
      conn.destroy();
      reject(new HiveError('E_TIMEOUT', `No answer from ${socketPath} within ${timeoutMs} ms`));
    }, timeoutMs);
    conn.on('connect', () => conn.write(`${JSON.stringify(request)}\n`));
    conn.on('data', (d) => (buf += String(d)));
    conn.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        err.code === 'ENOENT' || err.code === 'ECONNREFUSED'
          ? new HiveError('E_NOT_FOUND', `Nothing listens on ${socketPath} (is the hive running?)`, { cause: err })
          : err,
      );
    });
    conn.on('end', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(buf));
      } catch {
        reject(new HiveError('E_IO', `Unreadable answer from ${socketPath}: ${JSON.stringify(buf.slice(0, 100))}`));
      }
    });
  });
}
