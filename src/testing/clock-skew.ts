import { realClock, type Clock } from '../agent/clock.ts';

/**
 * The agents' clock, shifted by `HIVE_TEST_CLOCK_SKEW_MS` when a test sets it: a hive
 * started "a minute later" without waiting a minute (the durable-timer tests). Only the
 * agents' own clock moves (their timers and turn times); unset, this is the real clock.
 */
export function agentClock(): Clock {
  const skew = Number(process.env.HIVE_TEST_CLOCK_SKEW_MS ?? 0);
  if (!Number.isFinite(skew) || skew === 0) return realClock;
  return { ...realClock, now: () => Date.now() + skew };
}
