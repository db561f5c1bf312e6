import { lastInboxSeq } from '../queue/inbox.ts';
import { CLIENT } from './workload.ts';

/** The highest seq delivered to the chaos client so far. */
function lastClientSeq(root: string): number {
  return lastInboxSeq(root, CLIENT);
}

export interface RoutingStall {
  /** The longest time (ms) nothing reached the client while traffic ran and nothing excused it. */
  maxMs: number;
  /** When that stall ended (epoch ms), or null when there was none. */
  endedAt: number | null;
}

/**
 * Watches that routing never stops: while the workload runs, replies must keep reaching
 * the client. A stall is time with no new delivery to it; time when routing is stopped
 * on purpose (`excuse.routing`: the supervisor is down, the disk is full) does not count.
 * The chaos invariant "routing never stopped for more than N s" reads `maxMs`.
 */
export function watchRouting(root: string, excuse: { routing: boolean }, everyMs = 200): { stop(): RoutingStall } {
  let seq = lastClientSeq(root);
  let since = Date.now();
  const worst: RoutingStall = { maxMs: 0, endedAt: null };
  const timer = setInterval(() => {
    const now = Date.now();
    const current = lastClientSeq(root);
    if (excuse.routing || current > seq) {
      const stalled = now - since;
      if (!excuse.routing && stalled > worst.maxMs) {
        worst.maxMs = stalled;
        worst.endedAt = now;
      }
      seq = current;
      since = now;
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const open = excuse.routing ? 0 : Date.now() - since;
      if (open > worst.maxMs) {
        worst.maxMs = open;
        worst.endedAt = null;
      }
      return worst;
    },
  };
}
