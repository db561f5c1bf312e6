import type { Counter, Histogram, Meter } from '@opentelemetry/api';

/**
 * The hive's metrics, recorded on the main thread from the events workers already send:
 *   hive.inbox.depth          gauge, per agent (undelivered-to-brain entries after the cursor)
 *   hive.delivery.latency     histogram, ms from a message's created_at to its inbox
 *   hive.messages.delivered   counter, per recipient
 *   hive.actor.restarts       counter, per worker host
 *   hive.dead_letters         counter, per error code
 */
export interface HiveMetrics {
  delivered(agent: string, latencyMs: number | undefined): void;
  restarted(host: string): void;
  deadLettered(code: string): void;
}

export function createHiveMetrics(meter: Meter, inboxDepths: () => { agent: string; depth: number }[]): HiveMetrics {
  const latency: Histogram = meter.createHistogram('hive.delivery.latency', {
    unit: 'ms',
    description: 'Time from a message being written (created_at) to its delivery into an inbox',
    advice: { explicitBucketBoundaries: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 10_000] },
  });
  const delivered: Counter = meter.createCounter('hive.messages.delivered', { description: 'Messages delivered into inboxes' });
  const restarts: Counter = meter.createCounter('hive.actor.restarts', { description: 'Worker restarts after a crash' });
  const dead: Counter = meter.createCounter('hive.dead_letters', { description: 'Items moved to dead-letter/' });
  meter
    .createObservableGauge('hive.inbox.depth', { description: 'Inbox entries after the cursor (waiting for the brain)' })
    .addCallback((result) => {
      for (const { agent, depth } of inboxDepths()) result.observe(depth, { 'agent.id': agent });
    });
  return {
    delivered(agent, latencyMs) {
      delivered.add(1, { 'agent.id': agent });
      if (latencyMs !== undefined) latency.record(Math.max(0, latencyMs), { 'agent.id': agent });
    },
    restarted(host) {
      restarts.add(1, { 'hive.host': host });
    },
    deadLettered(code) {
      dead.add(1, { 'error.type': code });
    },
  };
}
