// The Redis Streams peer: redis-server started here on a free loopback port with
// appendonly yes and appendfsync always (every write command is in the AOF and flushed
// before Redis answers it). Each agent's inbox is a stream with a consumer group; the client's
// inbox is the stream in:client. See redis-agent.mjs for a turn.
import fs from 'node:fs';
import net from 'node:net';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { startAgentWorkers, type Peer, type PeerCheck, checkCounts } from './peer.ts';

const AGENT = new URL('./redis-agent.mjs', import.meta.url);

/** Why the Redis peer cannot run here, or null. */
export function redisUnavailable(): string | null {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return r.error ? 'redis-server is not installed (Debian: apt-get install redis-server)' : null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function startServer(dir: string): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--protected-mode', 'yes'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += String(d);
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out.slice(-500)}`)));
  });
  return { proc, port };
}

export async function startRedisPeer(dir: string, agents: string[], batch = 256): Promise<Peer> {
  fs.mkdirSync(dir, { recursive: true });
  const { proc, port } = await startServer(dir);
  const redis = new Redis({ port, host: '127.0.0.1' });
  const reader = new Redis({ port, host: '127.0.0.1' }); // blocking reads need their own connection
  for (const a of agents) await redis.xgroup('CREATE', `in:${a}`, 'g', '$', 'MKSTREAM');
  const workers = await startAgentWorkers(AGENT, agents, (agent) => ({ port, agent, batch }));
  const listeners = new Set<(ids: string[]) => void>();
  let closing = false;
  let last = '0'; // from the stream's start: '$' between two reads would miss what arrived in between
  const reading = (async () => {
    while (!closing) {
      const res = await reader.xread('COUNT', 1000, 'BLOCK', 100, 'STREAMS', 'in:client', last);
      const entries = (res?.[0]?.[1] ?? []) as [string, string[]][];
      if (entries.length === 0) continue;
      last = entries[entries.length - 1]![0];
      const ids = entries.map(([, fields]) => fields[fields.indexOf('in_reply_to') + 1]!);
      for (const l of listeners) l(ids);
    }
  })();
  return {
    name: 'redis',
    serverPids: [proc.pid!],
    async send(requests) {
      // One pipeline: each XADD is in the AOF and flushed before its answer (group commit).
      const p = redis.pipeline();
      for (const r of requests) p.xadd(`in:${r.to}`, '*', 'id', r.id, 'body', r.body);
      const results = await p.exec();
      const failed = results?.find(([err]: [Error | null, unknown]) => err);
      if (failed) throw failed[0];
    },
    onReplies(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async check(requestIds): Promise<PeerCheck> {
      const counts = new Map<string, number>();
      const entries = await redis.xrange('in:client', '-', '+');
      for (const [, fields] of entries) {
        const id = fields[fields.indexOf('in_reply_to') + 1]!;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      const handled = Object.values(await redis.hgetall('handled')).reduce((n: number, v: string) => n + Number(v), 0);
      return checkCounts(requestIds, counts, handled);
    },
    async close() {
      for (const w of workers) w.postMessage('stop');
      await Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))));
      closing = true;
      await reading;
      await Promise.all([redis.quit(), reader.quit()]);
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode === null ? proc.once('exit', r) : r(null)));
    },
  };
}
