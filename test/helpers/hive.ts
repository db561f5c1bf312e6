import { afterEach } from 'vitest';
import { createHive, type Hive } from '../../src/hive.ts';
import type { HiveConfigInput } from '../../src/config/schema.ts';
import type { HiveEventMap, HiveEventName } from '../../src/supervisor/events.ts';
import { tempRoot } from './temp.ts';

const open: Hive[] = [];

/** Settings that keep tests fast: short polls and backoff. */
export function fastConfig(overrides: Partial<HiveConfigInput> = {}): HiveConfigInput {
  return {
    root: tempRoot(),
    agents: [],
    ...overrides,
    // The git audit trail spawns git every few seconds in every hive; only tests about it
    // (which pass their own `audit`) pay for that, so parallel test files stay fast.
    audit: overrides.audit ?? { enabled: false },
    router: { pollMs: 500, ...(overrides.router ?? {}) },
    supervisor: {
      inboxPollMs: 500,
      stopGraceMs: 2_000,
      ...(overrides.supervisor ?? {}),
      restart: {
        maxRestarts: 5,
        withinMs: 60_000,
        ...(overrides.supervisor?.restart ?? {}),
        backoff: { initialMs: 20, maxMs: 200, factor: 2, jitter: 0.1, ...(overrides.supervisor?.restart?.backoff ?? {}) },
      },
    },
  };
}

/** Creates and starts a hive that is closed after the test. */
export async function startHive(config: HiveConfigInput): Promise<Hive> {
  const hive = createHive(config);
  open.push(hive);
  await hive.start();
  return hive;
}

const ALL_EVENTS: HiveEventName[] = ['delivered', 'processed', 'crashed', 'restarted', 'failed', 'dead-lettered', 'state', 'spawned', 'stopped'];

/**
 * Resolves when `check()` is true, re-checking on every hive event (and every 100 ms
 * for conditions that change on disk only). Rejects with `label` after `timeoutMs`.
 */
export function waitFor(hive: Hive, check: () => boolean, label: string, timeoutMs = 45_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const offs: (() => void)[] = [];
    const done = (err?: Error) => {
      clearTimeout(timer);
      clearInterval(tick);
      for (const off of offs) off();
      if (err) reject(err);
      else resolve();
    };
    const test = () => {
      try {
        if (check()) done();
      } catch (err) {
        done(err as Error);
      }
    };
    const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for: ${label}`)), timeoutMs);
    const tick = setInterval(test, 100);
    for (const name of ALL_EVENTS) offs.push(hive.on(name, test));
    test();
  });
}

/** The next event `name` that matches `predicate`. */
export function nextEvent<K extends HiveEventName>(
  hive: Hive,
  name: K,
  predicate: (e: HiveEventMap[K]) => boolean = () => true,
  timeoutMs = 45_000,
): Promise<HiveEventMap[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for event ${name}`));
    }, timeoutMs);
    const off = hive.on(name, (e) => {
      if (!predicate(e)) return;
      clearTimeout(timer);
      off();
      resolve(e);
    });
  });
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close().catch(() => undefined)));
});

/**
 * Ends the router's thread (a crash the supervisor restarts after its backoff) and waits
 * until the supervisor saw it go: until the router is back, hive.send() writes the send log.
 * Give the hive a long `restart.backoff.initialMs` to send in that window.
 */
export async function crashRouter(hive: Hive): Promise<void> {
  const worker = hive.supervisor.routerWorker();
  if (!worker) throw new Error('crashRouter: no router thread runs');
  await worker.terminate();
  await waitFor(hive, () => hive.supervisor.routerWorker() === null, 'the router thread gone');
}
