import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

/** Why nats-server cannot be started here (null: it can). `.ci/run` installs it from Debian. */
export function natsUnavailable(): string | null {
  const r = spawnSync('nats-server', ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return 'nats-server is not installed (apt-get install -y nats-server)';
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface NatsServer {
  url: string;
  port: number;
  storeDir: string;
  process: ChildProcess;
  /** Stops it (SIGTERM, then SIGKILL after 3 s) and removes its store unless `keepStore`. */
  stop(options?: { keepStore?: boolean }): Promise<void>;
  /** SIGKILLs it (the store stays, for a restart on it). */
  kill(): Promise<void>;
}

/**
 * A nats-server with JetStream on a free loopback port and its own store folder, ready when
 * this resolves. `storeDir` restarts one on an old store.
 */
export async function startNatsServer(options: { storeDir?: string; port?: number } = {}): Promise<NatsServer> {
  const missing = natsUnavailable();
  if (missing) throw new Error(missing); // `npm test`'s pretest installs it; a test never skips for want of it
  const storeDir = options.storeDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hive-nats-'));
  const port = options.port ?? (await freePort());
  const child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-8000)));
  const ready = await new Promise<boolean>((resolve) => {
    const deadline = Date.now() + 10_000;
    const check = () => {
      if (/Server is ready/.test(log)) return resolve(true);
      if (child.exitCode !== null || Date.now() > deadline) return resolve(false);
      setTimeout(check, 20);
    };
    check();
  });
  if (!ready) {
    child.kill('SIGKILL');
    throw new Error(`nats-server did not start on port ${port}:\n${log}`);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    process: child,
    async stop(o = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(t);
      }
      if (!o.keepStore) fs.rmSync(storeDir, { recursive: true, force: true });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
