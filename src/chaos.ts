/**
 * `hive-runtime/chaos`: the engine behind `hive chaos`, for a user's own tests: a workload
 * on a copy of a hive while faults are injected from a seed, then the invariants.
 * @example
 * import { runChaos, formatReport } from 'hive-runtime/chaos';
 * const report = await runChaos({ config, durationMs: 20_000, seed: 7 });
 * console.log(formatReport(report));
 */
export { runChaos, formatReport, type ChaosOptions, type ChaosReport } from './chaos/engine.ts';
export { FAULT_KINDS, type FaultKind, type FaultRecord } from './chaos/faults.ts';
export type { Invariant } from './chaos/invariants.ts';
export { PLANTS, type PlantName } from './testing/seams.ts';
