import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { freeLoopbackPort, natsServerMissing } from '../../src/chaos/nats-node.ts';

/** Why nats-server cannot be started here (null: it can). `.ci/run` installs it from Debian. */
export const natsUnavailable = natsServerMissing;

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
  const port = options.port ?? (await freeLoopbackPort());
  const child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let panic = ''; // a Go panic's first lines (its stack trace would push them out of the tail)
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    if (panic.length > 0 && panic.length < 1_500) panic = (panic + text).slice(0, 1_500);
    else if (!panic && text.includes('panic:')) panic = text.slice(text.indexOf('panic:'), text.indexOf('panic:') + 1_500);
    log = (log + text).slice(-8000);
  });
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
  // A server that goes away by itself (not stopped or killed here) says why, for the next
  // person: a full suite once found its shared server gone (ECONNREFUSED) with no trace.
  let ending = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      if (!ending) process.stderr.write(`nats-server on port ${port} exited by itself (code ${code}, signal ${signal}); its log ends:\n${panic ? `${panic}\n…\n` : ''}${log.slice(-2_000)}\n`);
      resolve();
    }),
  );
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    process: child,
    async stop(o = {}) {
      ending = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(t);
      }
      if (!o.keepStore) fs.rmSync(storeDir, { recursive: true, force: true });
    },
    async kill() {
      ending = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
