/**
 * Lets the router thread's event loop turn between the passes of one run (docs/architecture.md,
 * "A routing pass"). A pass that leaves more (a sweep's next slice of outboxes, a sender's
 * next batch) is followed at once by the next, through the router machine's promise
 * callbacks; with the passes' file system calls synchronous, a run of them never let the
 * thread see a message port or a file event. At 10,000 agents the safety poll's 512
 * outboxes are 16 passes of ~1.5 ms: an agent's kick with its reply, or a request's file
 * event, waited for all of them (traced: 20–30 ms of a request's 35–45 ms).
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
