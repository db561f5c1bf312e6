/**
 * Lets the router thread's event loop turn between the passes of one run (docs/architecture.md,
 * "A routing pass"): a pass that leaves more is followed at once by the next through the
 * router machine's promise callbacks, and a run of passes that deliver nothing (a sweep's
 * slices: synchronous file system calls only) kept kicks and file events waiting until it
 * ended. Input that comes during a pass is heard after at most the next one (a run started
 * from input gets its first turn in the same loop iteration, after input was polled).
 */
export class PassTurns {
  private continuing = false;

  /** Before a pass: after one that left more, one turn of the event loop (kicks, sends and file events come in). */
  async before(): Promise<void> {
    if (this.continuing) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** After a pass: whether it left more for the next one. */
  after(more: boolean): void {
    this.continuing = more;
  }
}
