import type { TurnClock } from '../agent/turn-clock.ts';

/** One agent the watchdog looks after. */
export interface WatchedTurn {
  agent: string;
  clock: TurnClock;
  /** The agent's turn deadline in ms. */
  limitMs: number;
  /** Ends the worker running the turn, as a crash with this reason. */
  kill(reason: string): void;
}

/**
 * Enforces the turn deadline (README, "A hive that nothing on its disk can stop"): a turn
 * whose TurnClock is older than its limit has its worker terminated, which the supervisor
 * treats as a crash (restart with backoff, poison after `poisonAfter`). Terminating the
 * thread is the only thing that stops a brain looping on the CPU.
 */
export class TurnWatchdog {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly turns: () => Iterable<WatchedTurn>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Checks every `intervalMs` (the timer does not keep the process alive). */
  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => this.check(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Kills every turn past its deadline; returns the agents whose turns were ended. */
  check(): string[] {
    const now = this.now();
    const killed: string[] = [];
    for (const t of this.turns()) {
      const started = t.clock.startedAt();
      if (started === null || now - started <= t.limitMs) continue;
      t.clock.clear(); // one kill per turn: the restarted worker stamps its own
      killed.push(t.agent);
      t.kill(`turn deadline: agent "${t.agent}" was in one turn for ${now - started} ms, over its limit of ${t.limitMs} ms (turnTimeoutMs); its worker was terminated`);
    }
    return killed;
  }
}

/** How often to check: a quarter of the shortest deadline, between 50 ms and 1 s. */
export function watchdogInterval(limitsMs: Iterable<number>): number {
  let shortest = Infinity;
  for (const l of limitsMs) shortest = Math.min(shortest, l);
  return Math.max(50, Math.min(1_000, Math.floor(shortest / 4)));
}
