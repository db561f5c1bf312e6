import { brainProblem } from '../brains/preflight.ts';
import type { BrainSpec } from '../config/schema.ts';
import { updateRegistry } from '../registry/registry.ts';
import { appendEvent } from '../log/event-log.ts';
import { godNotice } from '../agent/compose.ts';
import { errorMessage } from '../errors.ts';
import { moduleBrainUrl } from './bundle.ts';
import type { SupervisorContext } from './context.ts';

/**
 * What is wrong with an agent's brain before any worker starts (brains/preflight.ts), or
 * null. A module brain is compiled here, once (its worker then loads the cached build).
 */
export async function brainPreflight(brain: BrainSpec): Promise<string | null> {
  const problem = brainProblem(brain);
  if (problem) return problem;
  if (brain.kind !== 'module') return null;
  try {
    await moduleBrainUrl(brain.module);
    return null;
  } catch (err) {
    return `brain module ${brain.module} could not be compiled: ${errorMessage(err)}`;
  }
}

/**
 * A configuration error, reported as one: the agent is marked failed in the registry, the
 * log says why (`actor.config-failed`), god gets a notice, `hive.on('failed')` fires. Its
 * inbox is left alone: no message is counted against a brain that never ran.
 */
export async function reportConfigFailure(ctx: SupervisorContext, id: string, problem: string): Promise<void> {
  const error = `Agent "${id}": ${problem}`;
  await updateRegistry(ctx.root, (reg) => {
    if (reg.agents[id]) reg.agents[id]!.status = 'failed';
  }).catch(() => undefined);
  appendEvent(ctx.root, { type: 'actor.config-failed', agent: id, error: problem });
  ctx.notices.post(godNotice('failed', `${id}/config/${Date.now()}`, `${id} cannot start`, `${error}. Its messages wait in its inbox; fix the configuration and start the hive (or spawn the agent) again.`));
  ctx.events.emit('failed', { host: 'config', agents: [id], error, restarts: 0 });
}
