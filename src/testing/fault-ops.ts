import type { Worker } from 'node:worker_threads';
import { HiveError } from '../errors.ts';
import type { ControlOps } from '../supervisor/control.ts';

/**
 * Faults `hive chaos` injects into a running hive through its control socket. A hive has
 * them only when started with the `faultOps` seam (`hive start --test-fault-ops`).
 * `crash`: the worker hosting an agent is terminated, the way a crash would end it.
 */
export function faultOps(supervisor: { workerOf(agentId: string): Worker | null }): ControlOps {
  return {
    crash: async (request) => {
      const agent = request.agent;
      if (typeof agent !== 'string') throw new HiveError('E_BAD_ARGS', 'crash: expected "agent" to be an agent id');
      const worker = supervisor.workerOf(agent);
      if (!worker) throw new HiveError('E_UNKNOWN_AGENT', `crash: agent "${agent}" has no running worker`);
      await worker.terminate();
      return { agent };
    },
  };
}
