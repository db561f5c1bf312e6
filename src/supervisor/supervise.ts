import { appendEvent } from '../log/event-log.ts';
import { updateRegistry } from '../registry/registry.ts';
import { godNotice } from '../agent/compose.ts';
import { HostChild, type HostChildHooks } from './host-child.ts';
import type { SupervisorContext } from './context.ts';

export interface SupervisedWorker<Api> extends Pick<HostChildHooks<Api>, 'start' | 'drain'> {
  /** The agents the worker hosts (none for the router and the memory actors). */
  agents?: () => string[];
  /** Runs on a restart before it is reported (a new thread: reset what the old one reported). */
  onRestarted?: () => void;
  /** Runs once the worker is given up on, with the agents it hosted (already marked failed in the registry). */
  onFailed?: (agents: string[]) => void;
}

/**
 * One supervised worker (agents' hosts, the router, the miner, the reflector), wired the
 * same way for all: a crash is logged and reported, a restart logged, counted and reported,
 * and a worker that keeps crashing is given up on: its agents are marked failed in the
 * registry and god gets a notice (docs/architecture.md, "Supervision").
 */
export function superviseWorker<Api>(ctx: SupervisorContext, id: string, worker: SupervisedWorker<Api>): HostChild<Api> {
  const agentsOf = worker.agents ?? (() => []);
  return new HostChild<Api>(id, ctx.config.supervisor.restart, {
    start: worker.start,
    drain: worker.drain,
    onCrashed: (info) => {
      if (ctx.closing()) return;
      const agents = agentsOf();
      appendEvent(ctx.root, { type: 'actor.crashed', host: id, agents, error: info.error, restarts: info.restarts, backoff_ms: info.delayMs });
      ctx.events.emit('crashed', { host: id, agents, ...info });
    },
    onRestarted: (info) => {
      worker.onRestarted?.();
      const agents = agentsOf();
      appendEvent(ctx.root, { type: 'actor.restarted', host: id, ...(worker.agents ? { agents } : {}), restarts: info.restarts, thread: info.threadId });
      ctx.observer()?.restarted(id);
      ctx.events.emit('restarted', { host: id, agents, restarts: info.restarts, threadId: info.threadId });
    },
    onFailed: (info) => void reportFailed(ctx, id, agentsOf(), info, worker.onFailed),
  });
}

async function reportFailed(
  ctx: SupervisorContext,
  id: string,
  agents: string[],
  info: { error: string; restarts: number },
  onFailed: ((agents: string[]) => void) | undefined,
): Promise<void> {
  if (ctx.closing()) return;
  appendEvent(ctx.root, { type: 'actor.failed', host: id, agents, error: info.error, restarts: info.restarts });
  await updateRegistry(ctx.root, (r) => {
    for (const a of agents) if (r.agents[a]) r.agents[a]!.status = 'failed';
  }).catch(() => undefined);
  onFailed?.(agents);
  ctx.observer()?.note(`${id} failed`);
  const what = agents.length > 0 ? `agent(s) ${agents.join(', ')}` : id;
  // The subject names a few (a pooled host carries a hundred); the body names them all.
  const named = agents.length > 5 ? `agent(s) ${agents.slice(0, 5).join(', ')} and ${agents.length - 5} more` : what;
  ctx.notices.post(
    godNotice(
      'failed',
      `${id}/${Date.now()}`,
      `${named} failed`,
      `The worker of ${what} crashed ${info.restarts + 1} times within ${ctx.config.supervisor.restart.withinMs} ms and was not restarted. ` +
        `Last error: ${info.error}. The rest of the hive keeps running; fix the cause and spawn it again.`,
    ),
  );
  ctx.events.emit('failed', { host: id, agents, ...info });
}
