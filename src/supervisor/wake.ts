/**
 * Coalesces wake-ups: every agent woken in one tick of the event loop is sent to its host
 * in one call (a batch of deliveries wakes each host once, not once per message).
 */
export class WakeCoalescer {
  private queue = new Map<string, Set<string>>();
  private scheduled = false;

  constructor(
    private readonly hostOf: (agent: string) => string | null,
    private readonly wake: (hostId: string, agents: string[]) => void,
  ) {}

  add(agent: string): void {
    const hostId = this.hostOf(agent);
    if (!hostId) return;
    let set = this.queue.get(hostId);
    if (!set) {
      set = new Set();
      this.queue.set(hostId, set);
    }
    set.add(agent);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      const queue = this.queue;
      this.queue = new Map();
      for (const [hostId, ids] of queue) this.wake(hostId, [...ids]);
    });
  }
}
