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
  /** SIGKILLs it as a crash: it is started again on its store and port, as it would be after a panic; resolves once it is ready. */
  crash(): Promise<void>;
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
  let ending = false;
  let child = await spawnReady(port, storeDir);
  // A server that goes away by itself (not stopped or killed here) says why and is started
  // again on its store and port, as a service manager would: nats-server 2.9.10 (Debian's)
  // was seen panicking in processServiceImport under a full suite's load, and a NATS process
  // crash is a fault Hive promises to ride out (its connections reconnect without end).
  let exited!: Promise<void>;
  let crashing = false;
  const watch = (c: ChildProcess & { output: Output }) => {
    exited = new Promise<void>((resolve) =>
      c.once('exit', (code, signal) => {
        if (!ending) {
          const { panic, log } = c.output;
          if (crashing) crashing = false;
          else process.stderr.write(`nats-server on port ${port} exited by itself (code ${code}, signal ${signal}); starting it again on its store. Its log ends:\n${panic ? `${panic}\n…\n` : ''}${log.slice(-2_000)}\n`);
          void spawnReady(port, storeDir).then(
            (next) => {
              if (ending) next.kill('SIGKILL');
              child = next;
              handle.process = next;
              watch(next);
              resolve();
            },
            (err: Error) => {
              process.stderr.write(`nats-server on port ${port} could not be started again: ${err.message}\n`);
              resolve();
            },
          );
        } else resolve();
      }),
    );
  };
  watch(child);
  const handle: NatsServer = {
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
    async crash() {
      crashing = true;
      child.kill('SIGKILL');
      await exited;
    },
  };
  return handle;
}

interface Output {
  log: string;
  /** A Go panic's first lines (its stack trace would push them out of the tail). */
  panic: string;
}

/** One nats-server process, resolved once it says it is ready. */
async function spawnReady(port: number, storeDir: string): Promise<ChildProcess & { output: Output }> {
  const child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], { stdio: ['ignore', 'ignore', 'pipe'] }) as ChildProcess & { output: Output };
  const output: Output = (child.output = { log: '', panic: '' });
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    if (output.panic.length > 0 && output.panic.length < 1_500) output.panic = (output.panic + text).slice(0, 1_500);
    else if (!output.panic && text.includes('panic:')) output.panic = text.slice(text.indexOf('panic:'), text.indexOf('panic:') + 1_500);
    output.log = (output.log + text).slice(-8000);
  });
  const ready = await new Promise<boolean>((resolve) => {
    const deadline = Date.now() + 10_000;
    const check = () => {
      if (/Server is ready/.test(output.log)) return resolve(true);
      if (child.exitCode !== null || Date.now() > deadline) return resolve(false);
      setTimeout(check, 20);
    };
    check();
  });
  if (!ready) {
    child.kill('SIGKILL');
    throw new Error(`nats-server did not start on port ${port}:\n${output.log}`);
  }
  return child;
}
