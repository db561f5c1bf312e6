import { armCrashPoint, type CrashPointName } from './crash-point.ts';

/**
 * Test seams: what a test or `hive chaos` asks of a hive to exercise its failure paths.
 * Passed in (createHive's `testing` option, `hive start --test-*` flags), carried to the
 * worker threads in their init data, and installed per thread; never read from the
 * environment, and never set in production, where each check is one comparison.
 */
export interface TestSeams {
  /** Stop the thread that reaches this point of a crash-order header (crash-point.ts). */
  crashAt?: CrashPointName;
  /** Run with a deliberately broken step, which the chaos invariants must catch. */
  plant?: PlantName;
  /** Every flush waits this long first: a slow disk. */
  fsyncDelayMs?: number;
  /** The control socket takes the fault ops of fault-ops.ts (`crash`). */
  faultOps?: boolean;
}

export const PLANTS = ['cursor-before-state', 'no-idempotency'] as const;
/**
 * `cursor-before-state`: the new cursor is committed with the old state first, the turn a
 * moment later (a window of 150 ms a kill must hit). `no-idempotency`: delivery takes an id
 * it already has.
 */
export type PlantName = (typeof PLANTS)[number];

let installed: TestSeams = {};

/** Installs the seams in this thread (`root`: where a crash point reports it was reached). */
export function installSeams(seams: TestSeams, root: string): void {
  installed = { ...seams };
  if (seams.crashAt) armCrashPoint(seams.crashAt, root);
}

/** The seams of this thread, for its worker threads' init data. */
export function currentSeams(): TestSeams {
  return installed;
}

export function plantActive(name: PlantName): boolean {
  return installed.plant === name;
}

export function fsyncDelayMs(): number {
  return installed.fsyncDelayMs ?? 0;
}
