import { errorMessage } from '../errors.ts';
import type { ClusterConfig } from '../config/schema.ts';

/**
 * Where unpinned agents of a cluster run (docs/architecture.md, "Cluster mode: leases").
 * A lease is a key of the KV bucket `<prefix>_leases`, whose entries expire `leaseMs`
 * after they were written. Every machine tries to create the key of each unpinned agent
 * (`create` succeeds only when no live entry is there); the one that succeeds runs the
 * agent and rewrites the key every `leaseMs / 3` with compare-and-set on its revision.
 * A machine that dies stops rewriting: its entries expire and a survivor's `create`
 * succeeds. A machine that fails to renew (cut off, or too late) stops the agent. Being
 * late is safe: the agent's commits are fenced (src/queue/jetstream-transport.ts), so a
 * stale owner cannot commit after the new one did.
 */
export interface LeaseHooks {
  /** This machine got the agent's lease: start it here. */
  acquired(agent: string): Promise<void>;
  /** This machine lost it (another holds it now, or NATS could not be reached in time): stop it. */
  lost(agent: string, why: string): Promise<void>;
  log(event: { type: string } & Record<string, unknown>): void;
}

interface LeaseKv {
  create(k: string, data: Uint8Array): Promise<number>;
  update(k: string, data: Uint8Array, version: number): Promise<number>;
  delete(k: string, opts?: { previousSeq?: number }): Promise<void>;
}

const enc = new TextEncoder();
const keyOf = (agent: string) => agent.replaceAll('.', '=');
/** How long a stop waits for NATS to answer before it goes on without (ms). */
const STOP_WAIT_MS = 1_000;

export class LeaseKeeper {
  private readonly held = new Map<string, { revision: number; renewedAt: number }>();
  private readonly starting = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;

  private constructor(
    private readonly kv: LeaseKv,
    private readonly close: () => Promise<void>,
    private readonly cluster: ClusterConfig,
    private readonly agents: string[],
    private readonly hooks: LeaseHooks,
  ) {}

  /** Connects, takes the leases it can, and keeps them (ticks every `leaseMs / 3`). */
  static async start(cluster: ClusterConfig, agents: string[], hooks: LeaseHooks): Promise<LeaseKeeper> {
    const [{ connect, Kvm, jetstreamManager }, { whileStarting }] = await Promise.all([import('../queue/nats.ts'), import('../queue/jetstream-transport.ts')]);
    const nc = await connect({ servers: cluster.servers, name: `hive-${cluster.prefix}-leases-${cluster.host}`, maxReconnectAttempts: -1, reconnectTimeWait: 500, pingInterval: 2_000, maxPingOut: 2 });
    const kv = await whileStarting(() => new Kvm(nc).create(`${cluster.prefix}_leases`, { ttl: cluster.leaseMs, history: 1, replicas: cluster.replicas }));
    // The bucket keeps the TTL it was made with; a changed leaseMs is written into it here,
    // or leases would expire between renewals (or outlive a dead machine for too long).
    const info = (await whileStarting(() => kv.status())).streamInfo;
    const maxAgeNs = cluster.leaseMs * 1_000_000;
    if (info.config.max_age !== maxAgeNs) {
      await whileStarting(async () => (await jetstreamManager(nc)).streams.update(info.config.name, { ...info.config, max_age: maxAgeNs }));
      hooks.log({ type: 'cluster.lease-ttl-changed', host: cluster.host, from_ms: Math.round(info.config.max_age / 1_000_000), to_ms: cluster.leaseMs });
    }
    const keeper = new LeaseKeeper(kv, () => nc.close(), cluster, agents, hooks);
    await keeper.tick();
    await keeper.started();
    keeper.schedule();
    return keeper;
  }

  /** The agents whose leases this machine holds. */
  holding(): string[] {
    return [...this.held.keys()];
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => this.schedule());
    }, Math.max(200, Math.floor(this.cluster.leaseMs / 3)));
    this.timer.unref();
  }

  private value(): Uint8Array {
    return enc.encode(JSON.stringify({ host: this.cluster.host, pid: process.pid, at: new Date().toISOString() }));
  }

  /**
   * One pass: every held lease renewed at once, then every free one tried. A renewal that
   * fails for want of an answer is tried again next pass; the agent is stopped only when
   * another machine holds the key, or when two thirds of `leaseMs` passed since the last
   * renewal (before the key can expire on the server, so two machines never both run it).
   * The start and stop of agents run beside the pass, never inside it: a slow one must not
   * hold up the renewal of the others.
   */
  private async tick(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.held].map(async ([agent, mine]) => {
        try {
          mine.revision = await this.kv.update(keyOf(agent), this.value(), mine.revision);
          mine.renewedAt = Date.now();
        } catch (err) {
          const taken = /wrong last sequence/i.test(errorMessage(err));
          if (!taken && now - mine.renewedAt < (this.cluster.leaseMs * 2) / 3) return; // tried again next pass
          this.held.delete(agent);
          this.hooks.log({ type: 'cluster.lease-lost', agent, host: this.cluster.host, error: errorMessage(err) });
          void this.hooks.lost(agent, errorMessage(err)).catch(() => undefined);
        }
      }),
    );
    if (this.stopped) return;
    await Promise.all(
      this.agents
        .filter((a) => !this.held.has(a))
        .map(async (agent) => {
          let revision: number;
          try {
            revision = await this.kv.create(keyOf(agent), this.value());
          } catch {
            return; // held by a live machine (or no answer: tried again next pass)
          }
          if (this.stopped) {
            await this.kv.delete(keyOf(agent), { previousSeq: revision }).catch(() => undefined);
            return;
          }
          this.held.set(agent, { revision, renewedAt: Date.now() });
          this.hooks.log({ type: 'cluster.lease-acquired', agent, host: this.cluster.host });
          this.starting.add(
            this.hooks.acquired(agent).catch((err) => this.hooks.log({ type: 'cluster.lease-start-failed', agent, host: this.cluster.host, error: errorMessage(err) })),
          );
        }),
    );
  }

  /** Waits for the agents this machine took to have started (start-up waits for the first pass). */
  async started(): Promise<void> {
    await Promise.all([...this.starting]);
    this.starting.clear();
  }

  /** Stops taking and renewing leases (a stopping supervisor, before its agents stop). */
  async halt(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // A pass waiting on NATS that does not answer is not waited out: whatever it takes from
    // now on it gives back at once (see tick), and a renewal it makes changes nothing.
    await Promise.race([this.ticking?.catch(() => undefined), new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
  }

  /** Stops renewing and gives the leases back, so another machine takes them at once. */
  async stop(): Promise<void> {
    await this.halt();
    // Given back if NATS answers soon; if not, the leases expire by themselves after leaseMs.
    const given = Promise.all([...this.held].map(([agent, { revision }]) => this.kv.delete(keyOf(agent), { previousSeq: revision }).catch(() => undefined)));
    await Promise.race([given, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
    this.held.clear();
    await this.close().catch(() => undefined);
  }
}
