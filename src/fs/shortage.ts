import { HiveError } from '../errors.ts';
/**
 * Errors that say the machine is short of a resource for now, not that the data or the
 * code is wrong: a full disk or quota, too many open files, no memory for a buffer. An
 * actor that meets one pauses and retries the same step with backoff; it does not crash,
 * so it never counts toward restart intensity or poison (docs: README, "A hive that
 * nothing on its disk can stop").
 */
const TRANSIENT = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'ENOMEM']);

/**
 * Cluster mode: NATS not answering for now (a server cut off, a cluster without a leader
 * for a moment) is a shortage too, marked by the JetStream transport
 * (`E_UNAVAILABLE` with `details.shortage: 'nats'`).
 */
const NATS = 'NATS';

/** The first transient code on `err` or the errors it wraps (`cause`), or null. */
function shortageCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT.has(code)) return code;
    if (code === 'E_UNAVAILABLE' && (e as { details?: { shortage?: unknown } }).details?.shortage === 'nats') return NATS;
  }
  return null;
}

/** True for ENOSPC, EDQUOT, EMFILE, ENFILE and ENOMEM (also when wrapped as a `cause`). */
export function isTransientResourceError(err: unknown): boolean {
  return shortageCode(err) !== null;
}

const SHORTAGE_WORDS: Record<string, string> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
  ENOMEM: 'out of memory',
  [NATS]: 'NATS unreachable',
};

/** What a paused actor's status says about the resource it waits for. */
export function describeShortage(err: unknown): string {
  return SHORTAGE_WORDS[shortageCode(err) ?? ''] ?? 'a resource is short';
}

export interface ShortageHooks {
  /** The step failed for want of `reason` ('disk full', ...): the actor is paused. */
  onPause(reason: string, error: unknown): void;
  /** The step went through after a pause of `pausedMs`. */
  onResume(pausedMs: number): void;
}

/** Waits between tries: doubling from `initialMs` up to `maxMs`. */
export const SHORTAGE_BACKOFF = { initialMs: 100, maxMs: 2_000 };

/** The wait before try `attempt + 1` (0-based) of a step that met a shortage. */
export function shortageDelay(attempt: number, backoff = SHORTAGE_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 20));
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref?.();
  });

/**
 * Runs an actor's steps so that a shortage pauses them instead of failing them: a step
 * that throws a transient resource error is tried again, with backoff, until it goes
 * through (the step must be safe to repeat: each of an agent's steps is, see
 * src/agent/commit.ts). Any other error is thrown at once.
 * @example const gate = new ShortageGate(hooks); await gate.run(() => writeOutbox(root, msgs));
 */
export class ShortageGate {
  private pausedAt: number | null = null;

  constructor(
    private readonly hooks: ShortageHooks,
    private readonly wait: (ms: number) => Promise<void> = sleep,
    private readonly backoff = SHORTAGE_BACKOFF,
  ) {}

  /** The shortage the actor waits out, or null when it is not paused. */
  reason: string | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;

  /**
   * Its actor is stopping: a step waiting out a shortage gives up (E_STOPPED) instead of
   * trying again; it had not happened, and is run again after the restart (every step
   * run through the gate may be).
   */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  async run<T>(step: () => T | Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await step();
        if (this.pausedAt !== null) {
          const pausedMs = Date.now() - this.pausedAt;
          this.pausedAt = null;
          this.reason = null;
          this.hooks.onResume(pausedMs);
        }
        return result;
      } catch (err) {
        if (!isTransientResourceError(err)) throw err;
        const reason = describeShortage(err);
        if (this.reason !== reason) {
          this.pausedAt ??= Date.now();
          this.reason = reason;
          this.hooks.onPause(reason, err);
        }
        if (this.stopped) throw new HiveError('E_STOPPED', `Stopped while waiting out a shortage (${reason})`, { cause: err });
        await Promise.race([this.wait(shortageDelay(attempt, this.backoff)), new Promise<void>((r) => (this.wake = r))]);
        this.wake = null;
        if (this.stopped) throw new HiveError('E_STOPPED', `Stopped while waiting out a shortage (${reason})`, { cause: err });
      }
    }
  }
}
