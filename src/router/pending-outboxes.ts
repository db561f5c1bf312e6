/**
 * Which outboxes the router reads in its next pass. Senders report their writes (a kick),
 * file events name the folder; the safety poll and a (re)start read every outbox.
 *
 * `mark()` answers whether the caller must still ask for a pass. Every mark that answers
 * true is followed by an event that starts a pass (or makes the running one go again),
 * and a pass `take()`s the set when it begins; so a sender already in the set will be
 * read, and another event for it changes nothing. Under load most file events and kicks
 * name a sender already queued; dropping them spares a stat and an XState event each
 * (a large share of the router thread at saturation, in a --cpu-prof profile).
 */
export class PendingOutboxes {
  private senders = new Set<string>();
  private all = true;

  /** True when a pass will read `sender`'s outbox without being asked again. */
  due(sender: string): boolean {
    return this.all || this.senders.has(sender);
  }

  /** Queues `senders` (none: every outbox); true when a pass must be requested for them. */
  mark(senders?: readonly string[]): boolean {
    if (!senders) {
      this.all = true;
      return true;
    }
    if (senders.every((s) => this.due(s))) return false;
    for (const s of senders) this.senders.add(s);
    return true;
  }

  /** Queues senders a pass left unfinished (the pass itself goes again: no request). */
  keep(senders: readonly string[]): void {
    for (const s of senders) this.senders.add(s);
  }

  /** What a pass begins with: the senders to read, or `undefined` for every outbox. */
  take(): Set<string> | undefined {
    const taken = this.all ? undefined : this.senders;
    this.all = false;
    this.senders = new Set();
    return taken;
  }
}
