/**
 * When the turn an agent is in started, shared between its worker and the supervisor
 * through a SharedArrayBuffer: the agent stamps it before its brain runs and clears it
 * after, with no message per turn; the supervisor reads it to enforce the turn deadline
 * and to show `thinking for 3 min`. It works where a message would not: a brain stuck
 * in a CPU loop never lets its thread post anything, but the stamp is already there.
 */
export class TurnClock {
  private readonly cell: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.cell = new BigInt64Array(buffer, 0, 1);
  }

  /** A turn starts now (epoch ms). */
  start(now: number): void {
    Atomics.store(this.cell, 0, BigInt(Math.max(1, Math.trunc(now))));
  }

  /** The turn ended (or the worker that ran it is gone). */
  clear(): void {
    Atomics.store(this.cell, 0, 0n);
  }

  /** Epoch ms the running turn started, or null when no turn runs. */
  startedAt(): number | null {
    const v = Atomics.load(this.cell, 0);
    return v === 0n ? null : Number(v);
  }
}
