import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { HiveError } from '../errors.ts';
import type { MachineNetwork } from './netns.ts';

/** Why `nats-server` cannot be started here (null: it can). */
export function natsServerMissing(): string | null {
  const r = spawnSync('nats-server', ['--version'], { encoding: 'utf8' });
  return r.error || r.status !== 0 ? 'nats-server is not installed (Debian: apt-get install -y nats-server)' : null;
}

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * One node of a nats-server cluster on loopback, JetStream on, its store in `dir`: what
 * `hive chaos --machines` runs for each machine. It can be killed, frozen (SIGSTOP: a
 * machine that stops answering) and started again on its store.
 */
export class NatsNode {
  private proc: ChildProcess | null = null;
  private log = '';

  constructor(
    readonly name: string,
    readonly dir: string,
    readonly port: number,
    readonly clusterPort: number,
    /** Every node's cluster address, `ip:port` (its own included). */
    private readonly routes: string[],
    private readonly clusterName: string,
    /** The address it listens on (a machine's namespace address in a MachineNetwork). */
    readonly ip = '127.0.0.1',
    /** A command line to run it under (`ip netns exec <ns>`). */
    private readonly wrap: string[] = [],
  ) {}

  get url(): string {
    return `nats://${this.ip}:${this.port}`;
  }

  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  async start(timeoutMs = 15_000): Promise<void> {
    fs.mkdirSync(this.dir, { recursive: true });
    const conf = path.join(this.dir, 'nats.conf');
    const routes = this.routes.map((r) => `nats://${r}`).join(', ');
    fs.writeFileSync(
      conf,
      `server_name: ${this.name}\nlisten: ${this.ip}:${this.port}\njetstream { store_dir: "${path.join(this.dir, 'store')}" }\n` +
        `cluster { name: ${this.clusterName}, listen: ${this.ip}:${this.clusterPort}, routes: [${routes}] }\n`,
    );
    this.log = '';
    const [cmd, ...pre] = [...this.wrap, 'nats-server'];
    const proc = spawn(cmd!, [...pre, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc = proc;
    proc.stderr!.on('data', (d: Buffer) => (this.log = (this.log + d.toString()).slice(-8_000)));
    const deadline = Date.now() + timeoutMs;
    while (!/Server is ready/.test(this.log)) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new HiveError('E_UNAVAILABLE', `nats-server ${this.name} did not start on ${this.ip}:${this.port}:\n${this.log}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** SIGKILL (the store stays, for a start on it). */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    this.proc = null;
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.proc?.kill(sig);
  }
}

/** `count` nodes, routed to each other, on free loopback ports (started by the caller). */
export async function natsClusterOnLoopback(dir: string, count: number, name: string): Promise<NatsNode[]> {
  const ports = await Promise.all(Array.from({ length: count * 2 }, () => freeLoopbackPort()));
  const routes = ports.slice(count).map((p) => `127.0.0.1:${p}`);
  return Array.from({ length: count }, (_, i) => new NatsNode(`n${i + 1}`, path.join(dir, `nats-${i + 1}`), ports[i]!, ports[count + i]!, routes, name));
}

/** A node per machine of a MachineNetwork, each in its namespace on its address (4222, 6222). */
export function natsClusterInNamespaces(dir: string, net: MachineNetwork, name: string): NatsNode[] {
  const routes = net.hosts.map((h) => `${net.ipOf(h)}:6222`);
  return net.hosts.map((h, i) => new NatsNode(`n${i + 1}`, path.join(dir, `nats-${i + 1}`), 4222, 6222, routes, name, net.ipOf(h), net.wrap(h)));
}
