import type { Delivery } from '../protocol/worker.ts';
import type { MinePassResult } from '../memory/mine.ts';
import type { ReflectResult } from '../memory/reflect.ts';

/** Events a running hive reports to `hive.on(...)`. */
export interface HiveEventMap {
  /**
   * Start-up progress, before `ready`: each phase as it ends (`lock`, `ensure`, `orphans`,
   * `observer`, `sweep`, `hosts`, `router`, `sockets`) with its time, and `agents` each time
   * one more agent worker is up (`done` of `total`).
   */
  starting: { phase: string; ms: number; done?: number; total?: number };
  ready: { root: string; agents: number };
  delivered: Delivery;
  /**
   * An agent committed a turn (its state.wal holds it: durable). The turn's replies reach
   * its outbox right after, then the router (see `delivered`).
   */
  processed: {
    agent: string;
    cursor: number;
    handled: { seq: number; id: string; from: string; act: string }[];
    sent: { id: string; to: string; act: string; subject: string; body: string; in_reply_to: string | null }[];
    timings: { fetchMs: number; thinkMs: number; commitMs: number };
  };
  crashed: { host: string; agents: string[]; error: string; restarts: number; delayMs: number };
  restarted: { host: string; agents: string[]; restarts: number; threadId: number };
  failed: { host: string; agents: string[]; error: string; restarts: number };
  'dead-lettered': { source: string; error: string; code?: string; agent?: string };
  state: { actor: string; value: string };
  /** An actor waits out a shortage (`reason`: disk full, too many open files...) instead of failing. */
  paused: { actor: string; reason: string; error: string };
  /** It went on by itself after `pausedMs`. */
  resumed: { actor: string; pausedMs: number };
  spawned: { agent: string; host: string };
  stopped: { agent: string };
  /** The miner re-mined something (memory.mined). */
  mined: MinePassResult;
  /** The reflector finished a condense: condensed, skipped or aborted (memory.condensed). */
  condensed: ReflectResult;
}

export type HiveEventName = keyof HiveEventMap;
type Listener<K extends HiveEventName> = (event: HiveEventMap[K]) => void;

/**
 * A tiny typed emitter. A listener that throws is reported on stderr and never breaks
 * the runtime (xstate's reportUnhandledError idea).
 */
export class HiveEvents {
  private readonly listeners = new Map<HiveEventName, Set<Listener<HiveEventName>>>();

  on<K extends HiveEventName>(name: K, listener: Listener<K>): () => void {
    let set = this.listeners.get(name);
    if (!set) {
      set = new Set();
      this.listeners.set(name, set);
    }
    set.add(listener as Listener<HiveEventName>);
    return () => set!.delete(listener as Listener<HiveEventName>);
  }

  emit<K extends HiveEventName>(name: K, event: HiveEventMap[K]): void {
    for (const l of this.listeners.get(name) ?? []) {
      try {
        (l as Listener<K>)(event);
      } catch (err) {
        setImmediate(() => process.stderr.write(`hive: a "${name}" listener threw: ${(err as Error)?.stack ?? String(err)}\n`));
      }
    }
  }
}
