import type { MessagePort } from 'node:worker_threads';
import type { RouterLinkMessage } from '../protocol/worker.ts';
import type { DeliveryHint } from '../queue/transport.ts';

/**
 * The router's direct channels to agent hosts (a MessageChannel the supervisor hands to
 * both): who lives where, the hosts' kicks, and the router's wakes, which carry what was
 * delivered (docs/architecture.md, "Inbox logs"). A host whose thread ended wakes through
 * main until it is linked again.
 */
export class HostLinks {
  private readonly links = new Map<string, { port: MessagePort; agents: Set<string> }>();
  private readonly hostOfAgent = new Map<string, string>();

  /** True when the agent's host has a direct channel. */
  has(agent: string): boolean {
    return this.hostOfAgent.has(agent);
  }

  attach(hostId: string, agents: string[], port: MessagePort, onKick: (m: Extract<RouterLinkMessage, { type: 'kick' }>) => void): void {
    this.links.get(hostId)?.port.close();
    this.links.set(hostId, { port, agents: new Set(agents) });
    for (const a of agents) this.hostOfAgent.set(a, hostId);
    port.on('message', (m: RouterLinkMessage) => {
      if (m.type === 'kick') onKick(m);
    });
    port.on('close', () => {
      if (this.links.get(hostId)?.port !== port) return;
      this.links.delete(hostId);
      for (const [a, h] of this.hostOfAgent) if (h === hostId) this.hostOfAgent.delete(a);
    });
    port.unref();
  }

  update(hostId: string, agents: string[]): void {
    const link = this.links.get(hostId);
    if (!link) return;
    for (const a of link.agents) if (this.hostOfAgent.get(a) === hostId) this.hostOfAgent.delete(a);
    link.agents = new Set(agents);
    for (const a of agents) this.hostOfAgent.set(a, hostId);
  }

  /**
   * Wakes the agents whose hosts have a direct channel, with what was delivered to them
   * (`told`, taken for every agent: what the others were told is dropped, they read their
   * inbox); returns the ones it woke.
   */
  wake(agents: string[], told: (agent: string) => DeliveryHint[]): string[] {
    const byHost = new Map<string, { agents: string[]; deliveries: DeliveryHint[] }>();
    for (const a of agents) {
      const deliveries = told(a);
      const h = this.hostOfAgent.get(a);
      if (!h || !this.links.has(h)) continue;
      const wake = byHost.get(h) ?? byHost.set(h, { agents: [], deliveries: [] }).get(h)!;
      wake.agents.push(a);
      wake.deliveries.push(...deliveries);
    }
    for (const [h, w] of byHost) {
      this.links.get(h)!.port.postMessage({ type: 'wake', agents: w.agents, ...(w.deliveries.length > 0 && { deliveries: w.deliveries }) } satisfies RouterLinkMessage);
    }
    return [...byHost.values()].flatMap((w) => w.agents);
  }
}
