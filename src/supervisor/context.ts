import type { HiveConfig } from '../config/schema.ts';
import { openFilesCaps, openFilesLimit } from '../fs/open-files.ts';
import type { WorkerInit } from '../protocol/worker.ts';
import type { HiveObserver } from '../telemetry/observer.ts';
import type { HiveEvents } from './events.ts';
import type { GodNotices } from './notices.ts';

/**
 * What the supervisor's parts share: the hive, its configuration, where events and
 * notices go, and whether the hive is closing. Built once by `Supervisor`.
 */
export interface SupervisorContext {
  readonly root: string;
  readonly config: HiveConfig;
  readonly events: HiveEvents;
  readonly notices: GodNotices;
  /** Telemetry, event-log rotation, audit trail; null until the hive has started it. */
  observer(): HiveObserver | null;
  closing(): boolean;
  /** What a worker's init carries for a test (src/testing/seams.ts). */
  testingInit(): Pick<WorkerInit, 'seams'>;
}

/**
 * Extra time a stopping worker gets to flush its spans when telemetry is on (an OTLP
 * export is an HTTP request, 10 s timeout by default); terminating earlier loses them.
 */
export function flushBudgetMs(ctx: SupervisorContext): number {
  return ctx.observer()?.tracer ? 10_000 : 0;
}

/**
 * The open-files cap of a router or agent host thread (src/fs/open-files.ts): the
 * process's limit shared out over the agent hosts the configuration makes.
 */
export function openFilesInitOf(config: HiveConfig, kind: 'router' | 'agentHost'): { openFiles: number } {
  const hosts = Math.ceil(config.agents.length / Math.max(1, config.supervisor.agentsPerWorker));
  return { openFiles: openFilesCaps(openFilesLimit(), hosts)[kind] };
}
