import { describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { LeaseKeeper } from '../src/supervisor/leases.ts';
import type { ClusterConfig } from '../src/config/schema.ts';
import { natsServerForFile } from './helpers/nats-per-file.ts';

const server = natsServerForFile();

function keeper(host: string, prefix: string, leaseMs: number, running: Set<string>, log: Record<string, unknown>[] = []) {
  const cluster: ClusterConfig = { servers: [server.url], host, prefix, replicas: 1, leaseMs };
  return LeaseKeeper.start(cluster, ['a', 'b'], {
    acquired: async (id) => void running.add(`${host}:${id}`),
    lost: async (id) => void running.delete(`${host}:${id}`),
    log: (e) => void log.push(e),
  });
}

describe('cluster leases (src/supervisor/leases.ts)', () => {
  it('each agent is held by one machine; a graceful stop hands its agents over at once; a changed leaseMs is written into the bucket', async () => {
    const prefix = `lease${process.pid}`;
    const running = new Set<string>();
    const one = await keeper('h1', prefix, 2_000, running);
    const two = await keeper('h2', prefix, 2_000, running);
    expect([...running].sort()).toEqual(['h1:a', 'h1:b']); // the first up takes both
    expect(two.holding()).toEqual([]);
    await one.stop(); // gives them back
    const until = Date.now() + 3_000;
    while (two.holding().length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(two.holding().sort()).toEqual(['a', 'b']);
    await two.stop();
    // A later start with another leaseMs changes the bucket's TTL.
    const log: Record<string, unknown>[] = [];
    const three = await keeper('h3', prefix, 4_000, new Set(), log);
    expect(log).toContainEqual(expect.objectContaining({ type: 'cluster.lease-ttl-changed', from_ms: 2_000, to_ms: 4_000 }));
    const nc = await connect({ servers: [server.url] });
    const status = await (await new Kvm(nc).open(`${prefix}_leases`)).status();
    expect(status.ttl).toBe(4_000);
    await nc.close();
    await three.stop();
  }, 30_000);

  it('a machine that dies (stops renewing, keeps its leases) loses them to another after leaseMs', async () => {
    const prefix = `die${process.pid}`;
    const running = new Set<string>();
    const dead = await keeper('h1', prefix, 1_500, running);
    await dead.halt(); // as if killed: no renewal, no hand-over
    const t0 = Date.now();
    const alive = await keeper('h2', prefix, 1_500, running);
    while (alive.holding().length < 2 && Date.now() - t0 < 8_000) await new Promise((r) => setTimeout(r, 50));
    expect(alive.holding().sort()).toEqual(['a', 'b']);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000); // not before the lease could expire
    await alive.stop();
    await dead.stop(); // its connection; its stale keys are not deleted (their revisions moved on)
  }, 30_000);
});
