import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Machines as Linux network namespaces (`ip netns`), each linked by a veth pair into one
 * bridge in this namespace, so a machine's link can be cut and healed while its processes
 * go on running (what a partition is). Needs root and `ip`: `hive chaos --machines` uses it
 * when it can, `npm run test:cluster` always.
 */
export class MachineNetwork {
  private readonly bridge: string;

  constructor(
    /** Names the namespaces and links (a few letters and digits, unique per run). */
    private readonly tag: string,
    readonly hosts: readonly string[],
    /** The third byte of the 10.77.x.0/24 subnet. */
    private readonly subnet: number,
  ) {
    this.bridge = `${tag}br`;
  }

  /** Why namespaces cannot be made here (null: they can). */
  static unavailable(): string | null {
    if (process.getuid?.() !== 0) return 'network namespaces need root';
    const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    if (r.error || r.status !== 0) return 'the ip command (iproute2) cannot list network namespaces here';
    // Root in a container may still lack the right to make them: try what `up` does, once.
    const probe = `hvprobe${process.pid % 100_000}`;
    try {
      sh('ip', ['netns', 'add', probe]);
      sh('ip', ['link', 'add', `${probe}a`, 'type', 'veth', 'peer', 'name', `${probe}b`]);
      sh('ip', ['link', 'set', `${probe}b`, 'netns', probe]);
      return null;
    } catch (err) {
      const said = String((err as { stderr?: unknown }).stderr ?? '').trim() || (err as Error).message;
      return `a network namespace with a veth link cannot be made here (${said.split('\n')[0]})`;
    } finally {
      spawnSync('ip', ['link', 'del', `${probe}a`], { stdio: 'ignore' });
      spawnSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
    }
  }

  ipOf(host: string): string {
    return `10.77.${this.subnet}.${this.hosts.indexOf(host) + 1}`;
  }

  /** The bridge's own address: how this namespace reaches the machines. */
  get bridgeIp(): string {
    return `10.77.${this.subnet}.254`;
  }

  private ns(host: string): string {
    return `${this.tag}-${host}`;
  }

  /** The host side of a machine's link: setting it down cuts the machine off. */
  private link(host: string): string {
    return `${this.tag}${host}`;
  }

  up(): void {
    this.down();
    sh('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    sh('ip', ['addr', 'add', `${this.bridgeIp}/24`, 'dev', this.bridge]);
    sh('ip', ['link', 'set', this.bridge, 'up']);
    for (const h of this.hosts) {
      const ns = this.ns(h);
      sh('ip', ['netns', 'add', ns]);
      sh('ip', ['link', 'add', this.link(h), 'type', 'veth', 'peer', 'name', `${this.link(h)}p`]);
      sh('ip', ['link', 'set', `${this.link(h)}p`, 'netns', ns]);
      sh('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', `${this.link(h)}p`, 'name', 'eth0']);
      sh('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${this.ipOf(h)}/24`, 'dev', 'eth0']);
      sh('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'eth0', 'up']);
      sh('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
      sh('ip', ['link', 'set', this.link(h), 'master', this.bridge]);
      sh('ip', ['link', 'set', this.link(h), 'up']);
    }
  }

  /** Removes what `up` made (what is not there is skipped). */
  down(): void {
    for (const h of this.hosts) {
      // The link goes with its pair: a namespace the kernel has not freed yet (sockets of the
      // killed processes still closing) would otherwise keep its peer here, in the way of the next run.
      spawnSync('ip', ['link', 'del', this.link(h)], { stdio: 'ignore' });
      spawnSync('ip', ['netns', 'del', this.ns(h)], { stdio: 'ignore' });
    }
    spawnSync('ip', ['link', 'del', this.bridge], { stdio: 'ignore' });
  }

  /** The command line that runs `cmd args` inside the machine's namespace. */
  wrap(host: string): string[] {
    return ['ip', 'netns', 'exec', this.ns(host)];
  }

  cut(host: string): void {
    sh('ip', ['link', 'set', this.link(host), 'down']);
  }

  heal(host: string): void {
    sh('ip', ['link', 'set', this.link(host), 'up']);
  }
}

function sh(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
