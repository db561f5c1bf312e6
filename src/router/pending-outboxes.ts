/**
 * Which outboxes the router reads in its next pass. Senders report their writes (a kick),
 * file events name the folder; a (re)start reads every outbox, and the safety poll reads
 * a rotating share of them.
 *
 * `mark()` answers whether the caller must still ask for a pass. Every mark that answers
 * true is followed by an event that starts a pass (or makes the running one go again),
 * and a pass `take()`s what is due when it begins; so a sender already due will be read,
 * and another event for it changes nothing. Under load most file events and kicks name a
 * sender already queued; dropping them spares a stat and an XState event each (a large
 * share of the router thread at saturation, in a --cpu-prof profile).
 *
 * A mark may be light (`files: false`): the sender asked because of a commit or a
 * `hive.send()` the router was told of, so the pass need not read its outbox folder and send
 * log (src/queue/transport.ts, PendingOptions). Folder events are never dropped for a
 * sender due only lightly (`due`), and a sweep or the poll always reads the folder.
 *
 * Cost grows with traffic, not with the hive's size (docs/architecture.md, "Idle agents
 * cost nothing"): a sweep of every outbox is read `sweepSlice` senders per pass, with the
 * senders that asked always in the next pass, so a request sent while a start's sweep of
 * 10,000 outboxes is under way waits for one slice, not for the sweep. The poll adds
 * `pollSlice` senders per tick in rotation instead of all of them: a hive of 10,000 idle
 * agents costs a few hundred directory reads per tick, not 10,000.
 */
export interface PendingOutboxesOptions {
  /** At most this many senders of a sweep per pass (default 32: a pass of 256 idle outboxes held the router ~30 ms, and a request that came meanwhile waited for it). */
  sweepSlice?: number;
  /**
   * At most this many in a pass that has senders who asked (default 16): their messages
   * wait for the whole pass, and a slice of 256 idle outboxes read beside each request
   * was most of a request's 20–40 ms in a hive of 10,000 agents (bench:scale).
   */
  busySweepSlice?: number;
  /** Senders the safety poll adds per tick, in rotation (default 512). */
  pollSlice?: number;
}

export class PendingOutboxes {
  /** Senders that asked (kicks, file events, unfinished batches): true when their files must be read too. */
  private asked = new Map<string, boolean>();
  /** The senders of the last `take` whose files need no look. */
  private light = new Set<string>();
  /** True until a pass expands "every outbox" into `sweep` (it needs the directory). */
  private sweepAll = true;
  /** Senders of a sweep not read yet, in order. */
  private sweep = new Set<string>();
  /** Where the poll's rotation stands. */
  private pollAt = 0;
  private readonly sweepSlice: number;
  private readonly busySweepSlice: number;
  private readonly pollSlice: number;

  constructor(options: PendingOutboxesOptions = {}) {
    this.sweepSlice = options.sweepSlice ?? 32;
    this.busySweepSlice = Math.min(this.sweepSlice, options.busySweepSlice ?? 16);
    this.pollSlice = options.pollSlice ?? 512;
  }

  /** True when the next pass reads `sender`'s outbox folder without being asked again. */
  due(sender: string): boolean {
    return this.asked.get(sender) === true;
  }

  /**
   * Queues `senders` for the next pass (none: every outbox, in slices); true when a pass
   * must be requested for them. A sender still waiting in a sweep is taken out of it: it
   * asked, so it goes in the next pass, not when the sweep comes to it (a sweep of 10,000
   * outboxes, or the safety poll's share of them, is hundreds of passes; a request whose
   * sender or reply-writer waited in one took 150–350 ms right after a start, bench:scale).
   * `files` false (for all, or for the senders it answers false for): a light mark.
   */
  mark(senders?: readonly string[], options: { files?: boolean | ((sender: string) => boolean) } = {}): boolean {
    if (!senders) {
      this.sweepAll = true;
      return true;
    }
    let added = false;
    for (const s of senders) {
      const files = typeof options.files === 'function' ? options.files(s) : options.files !== false;
      const was = this.asked.get(s);
      if (was === undefined) added = true;
      else if (was || !files) continue; // due already (a pass was asked for when it became due)
      this.asked.set(s, files);
    }
    return added;
  }

  /**
   * The safety poll: the next `pollSlice` of `all` (in rotation) join the sweep. True when
   * a pass must be requested (some of them were not due already).
   */
  poll(all: ReadonlySet<string>): boolean {
    const ids = [...all];
    if (ids.length === 0) return false;
    if (ids.length <= this.pollSlice) return this.mark();
    let added = false;
    for (let i = 0; i < this.pollSlice; i++) {
      const id = ids[(this.pollAt + i) % ids.length]!;
      if (this.sweepAll || this.asked.get(id) === true || this.sweep.has(id)) continue;
      this.sweep.add(id);
      added = true;
    }
    this.pollAt = (this.pollAt + this.pollSlice) % ids.length;
    return added;
  }

  /** Queues senders a pass left unfinished (the pass itself goes again: no request). */
  keep(senders: readonly string[]): void {
    for (const s of senders) this.asked.set(s, true);
  }

  /** True while a sweep has senders left: the pass that took a slice must go again. */
  sweeping(): boolean {
    return this.sweepAll || this.sweep.size > 0;
  }

  /** The senders of the last `take` that asked only lightly: their files need no look this pass. */
  lightOnes(): ReadonlySet<string> {
    return this.light;
  }

  /** What a pass begins with: the senders that asked, and the next slice of a sweep over `all` (a small one beside senders that asked). */
  take(all: Iterable<string>): Set<string> {
    if (this.sweepAll) {
      this.sweepAll = false;
      for (const s of all) this.sweep.add(s);
    }
    const taken = new Set<string>();
    this.light = new Set();
    for (const [s, files] of this.asked) {
      taken.add(s);
      // One the sweep was still to read is read whole, files too.
      if (!this.sweep.delete(s) && !files) this.light.add(s);
    }
    this.asked = new Map();
    const slice = taken.size > 0 ? this.busySweepSlice : this.sweepSlice;
    let n = 0;
    for (const s of this.sweep) {
      if (n++ >= slice) break;
      taken.add(s);
      this.sweep.delete(s);
    }
    return taken;
  }
}
