import type { WorkerEvent } from '../protocol/worker.ts';
import type { HiveEvents } from './events.ts';
import type { AgentHosts } from './agent-hosts.ts';
import { ROUTER_HOST, type RouterChild } from './router-child.ts';
import type { MemoryActors } from './memory-actors.ts';

/**
 * The main thread's side of the worker events (the agents' and the router's): what they
 * report is kept for `status` and the inspector, deliveries wake their agents, and each is
 * relayed to `hive.on(...)` as a `HiveEvents` event. The memory actors relay their own.
 */
export function relayWorkerEvent(e: WorkerEvent, to: { agents: AgentHosts; router: RouterChild; events: HiveEvents; memory?: Pick<MemoryActors, 'notify'> }): void {
  const { agents, router, events } = to;
  switch (e.type) {
    case 'actor.context': {
      const r = agents.get(e.agent);
      if (r) r.context = e.context;
      break;
    }
    case 'router.delivered': {
      // The router woke most recipients itself (a direct channel to their host); a second
      // wake from here cost each turn a comlink call and an empty fetch.
      const woken = new Set(e.woken ?? []);
      for (const d of e.deliveries) {
        if (!woken.has(d.agent)) agents.wake(d.agent);
        events.emit('delivered', d);
      }
      break;
    }
    case 'router.rejected':
      for (const item of e.items) {
        events.emit('dead-lettered', { source: `agents/${item.sender}/outbox/${item.ref}`, error: item.error, ...(item.code ? { code: item.code } : {}), agent: item.sender });
      }
      break;
    case 'memory.mirrored':
      // Cluster mode: a memory written on any machine reached this one's mirror.
      to.memory?.notify(e.agent);
      break;
    case 'router.state':
      router.reported({ value: e.value });
      events.emit('state', { actor: 'router', value: e.value });
      break;
    case 'outbox.written':
      router.kick([e.agent]);
      break;
    case 'actor.state': {
      const r = agents.get(e.agent);
      if (r) {
        r.value = e.value;
        r.cursor = e.cursor;
        r.handled = e.handled;
      }
      events.emit('state', { actor: e.agent, value: e.value });
      break;
    }
    case 'actor.started':
      agents.started(e.agent, e.info);
      break;
    case 'actor.processed':
      events.emit('processed', { agent: e.agent, cursor: e.cursor, handled: e.handled, sent: e.sent, timings: e.timings });
      break;
    case 'actor.paused':
    case 'actor.resumed': {
      const reason = e.type === 'actor.paused' ? e.reason : null;
      if (e.agent === ROUTER_HOST) router.reported({ paused: reason });
      else {
        const r = agents.get(e.agent);
        if (r) r.paused = reason;
      }
      if (e.type === 'actor.paused') events.emit('paused', { actor: e.agent, reason: e.reason, error: e.error });
      else events.emit('resumed', { actor: e.agent, pausedMs: e.pausedMs });
      break;
    }
    case 'actor.poisoned':
      events.emit('dead-lettered', { source: `agents/${e.agent}/inbox`, error: `poison message ${e.id} (${e.attempts} crashes)`, code: 'E_POISON', agent: e.agent });
      break;
    default:
      break;
  }
}
