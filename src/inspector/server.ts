import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Hive } from '../hive.ts';
import { agentTurns, conversationOf, godInbox, searchMessages, type InboxSource } from './conversations.ts';
import { inboxRows, openToolTransport } from '../queue/tool-transport.ts';
import { createFsTransport } from '../queue/fs-transport.ts';
import type { Transport } from '../queue/transport.ts';
import { readClusterFile } from '../supervisor/cluster-file.ts';
import { HiveError, errorMessage, isHiveError } from '../errors.ts';
import { renderMachineSvg } from './diagram.ts';
import { agentMachineSvg } from './agent-machine.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { MACHINES, machineGraph, type MachineName } from './machine-graph.ts';
import { InspectorModel, type InspectorUpdate } from './model.ts';
import { shippedFile } from '../package-files.ts';
import { TOKEN_COOKIE, createToken, presentedToken, tokenMatches } from './auth.ts';

/**
 * The visual inspector: a small HTTP server on 127.0.0.1 (random port by default) that
 * serves one page (static files in `static/`), the machine diagrams, a JSON snapshot,
 * server-sent events with live updates, and the ASK ME answer endpoint.
 *
 * Security: loopback only; every request needs the token (401 otherwise); the Host
 * header must name the loopback address (DNS rebinding); answers must carry the token
 * in a header (a cookie alone is not enough for a write, so no cross-site form can
 * post one).
 */

export interface Inspector {
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

/** Found from the package folder, not this module's URL: the CLI runs as a bundle of its own. */
const STATIC_DIR = shippedFile('src/inspector/static');
const STATIC: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/assets/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/assets/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};
const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
};

let diagrams: Promise<Record<MachineName, string>> | null = null;

/** Every machine's SVG, rendered once per process. */
export function machineDiagrams(): Promise<Record<MachineName, string>> {
  diagrams ??= (async () => {
    const out = {} as Record<MachineName, string>;
    // The server keeps the process alive while a page waits for these; a hive stopped
    // right after its start does not wait for them.
    for (const name of Object.keys(MACHINES) as MachineName[]) out[name] = await renderMachineSvg(machineGraph(MACHINES[name]), { idPrefix: `m-${name}`, holdProcess: false });
    return out;
  })();
  return diagrams;
}

function send(res: http.ServerResponse, status: number, body: string, type = 'application/json; charset=utf-8', extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
  res.end(body);
}

function sendError(res: http.ServerResponse, status: number, code: string, message: string): void {
  send(res, status, JSON.stringify({ ok: false, error: { code, message } }));
}

async function readBody(req: http.IncomingMessage, max = 256 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new HiveError('E_BAD_ARGS', `Request body larger than ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Serves the inspector for a running hive.
 * @example const ins = await startInspector(hive); console.log(ins.url); await ins.close();
 */
export async function startInspector(hive: Hive, options: { port?: number; token?: string } = {}): Promise<Inspector> {
  const token = options.token ?? createToken();
  const model = new InspectorModel(hive);
  // Conversations are read through a transport: the folder's, or in cluster mode (decided
  // at each request: the router writes cluster.json as it starts) JetStream's, with every
  // machine's inboxes.
  let tools: Promise<Transport> | null = null;
  let local: Transport | null = null;
  const inboxes = async (): Promise<InboxSource> => {
    let t: Transport;
    if (readClusterFile(hive.root)) {
      tools ??= openToolTransport(hive.root).catch((err: unknown) => ((tools = null), Promise.reject(err)));
      t = await tools;
    } else t = local ??= createFsTransport(hive.root);
    return (agent) => inboxRows(t, agent);
  };
  const streams = new Set<http.ServerResponse>();
  let port = 0;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err) => {
      // A request Hive cannot make sense of (a bad cookie, a malformed URL) is a 400.
      const bad = isHiveError(err, 'E_BAD_ARGS') || (err as { code?: string }).code === 'ERR_INVALID_URL' || err instanceof URIError;
      if (!res.headersSent) sendError(res, bad ? 400 : 500, bad ? 'E_BAD_ARGS' : 'E_IO', errorMessage(err));
      else res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const host = req.headers.host ?? '';
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) return sendError(res, 421, 'E_BAD_ARGS', `Unexpected Host header ${JSON.stringify(host)}`);
    const url = new URL(req.url ?? '/', `http://${host}`);
    const presented = presentedToken(req, url);
    if (!tokenMatches(presented.token, token)) {
      return sendError(res, 401, 'E_BAD_ARGS', 'Missing or wrong token: open the URL printed in the `hive ready` line (it ends with ?token=...)');
    }
    const route = `${req.method} ${url.pathname}`;
    const asset = STATIC[url.pathname];
    if (req.method === 'GET' && asset) {
      const extra: Record<string, string> = {};
      if (url.pathname === '/') extra['set-cookie'] = `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`;
      return send(res, 200, fs.readFileSync(path.join(STATIC_DIR, asset.file), 'utf8'), asset.type, extra);
    }
    switch (route) {
      case 'GET /api/machines':
        return send(res, 200, JSON.stringify(await machineDiagrams()));
      case 'GET /api/agent-machine': {
        const agent = url.searchParams.get('agent') ?? '';
        if (!isAgentId(agent)) return sendError(res, 400, 'E_BAD_ARGS', 'Expected ?agent=<agent id>');
        const svg = await agentMachineSvg(hive.root, agent, { holdProcess: false });
        if (!svg) return sendError(res, 404, 'E_NOT_FOUND', `Agent ${agent} has no machine of its own`);
        return send(res, 200, JSON.stringify({ agent, svg }));
      }
      case 'GET /api/state':
        return send(res, 200, JSON.stringify(model.snapshot()));
      case 'GET /api/events':
        return openStream(res);
      case 'GET /api/conversation': {
        const id = url.searchParams.get('id') ?? '';
        if (!id) return sendError(res, 400, 'E_BAD_ARGS', 'Expected ?id=<conversation id>');
        return send(res, 200, JSON.stringify({ conversation: id, messages: await conversationOf(hive.root, id, await inboxes()) }));
      }
      case 'GET /api/search':
        return send(res, 200, JSON.stringify({ query: url.searchParams.get('q') ?? '', messages: await searchMessages(hive.root, url.searchParams.get('q') ?? '', 50, await inboxes()) }));
      case 'GET /api/turns':
        return send(res, 200, JSON.stringify(agentTurns(hive.root, url.searchParams.get('agent') ?? '')));
      case 'GET /api/god':
        return send(res, 200, JSON.stringify({ messages: await godInbox(hive.root, 50, await inboxes()) }));
      case 'POST /api/answer': {
        if (presented.via !== 'header') return sendError(res, 403, 'E_BAD_ARGS', 'Answers must carry the token in the x-hive-token header');
        let input: { id?: unknown; body?: unknown };
        try {
          input = JSON.parse(await readBody(req)) as typeof input;
        } catch {
          return sendError(res, 400, 'E_BAD_ARGS', 'Expected a JSON body { "id": "<question id>", "body": "<answer>" }');
        }
        try {
          if (typeof input.id !== 'string') throw new HiveError('E_BAD_ARGS', 'Expected `id` to be the question id (a string)');
          const sent = model.answer(input.id, input.body as string);
          return send(res, 200, JSON.stringify({ ok: true, id: sent.id }));
        } catch (err) {
          const status = isHiveError(err, 'E_NOT_FOUND') ? 404 : isHiveError(err, 'E_CONFLICT') ? 409 : isHiveError(err, 'E_BAD_ARGS') || isHiveError(err, 'E_BAD_MESSAGE') ? 400 : 500;
          return sendError(res, status, isHiveError(err) ? err.code : 'E_IO', errorMessage(err));
        }
      }
      case 'POST /api/dead-letters/retry':
      case 'POST /api/dead-letters/discard': {
        if (presented.via !== 'header') return sendError(res, 403, 'E_BAD_ARGS', 'Dead-letter actions must carry the token in the x-hive-token header');
        let input: { name?: unknown };
        try {
          input = JSON.parse(await readBody(req)) as typeof input;
        } catch {
          return sendError(res, 400, 'E_BAD_ARGS', 'Expected a JSON body { "name": "<dead letter name>" }');
        }
        try {
          const r = model.resolveDeadLetter(input.name as string, url.pathname.endsWith('/retry') ? 'retry' : 'discard');
          return send(res, 200, JSON.stringify({ ok: true, ...r }));
        } catch (err) {
          const status = isHiveError(err, 'E_NOT_FOUND') ? 404 : isHiveError(err, 'E_BAD_ARGS') || isHiveError(err, 'E_BAD_MESSAGE') || isHiveError(err, 'E_UNKNOWN_AGENT') ? 400 : 500;
          return sendError(res, status, isHiveError(err) ? err.code : 'E_IO', errorMessage(err));
        }
      }
      default:
        return sendError(res, 404, 'E_NOT_FOUND', `No such inspector resource: ${route}`);
    }
  }

  function openStream(res: http.ServerResponse): void {
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    const write = (u: InspectorUpdate) => res.write(`event: ${u.type}\ndata: ${JSON.stringify(u.data)}\n\n`);
    write({ type: 'snapshot', data: model.snapshot() });
    const off = model.subscribe(write);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    streams.add(res);
    res.on('close', () => {
      off();
      clearInterval(ping);
      streams.delete(res);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  void machineDiagrams(); // warm up: the first page load should not wait for the layout
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    async close() {
      model.close();
      void tools?.then((t) => t.close(), () => undefined);
      local?.close();
      for (const s of streams) s.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
