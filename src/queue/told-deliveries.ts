import type { HiveMessage } from '../protocol/message.ts';

/**
 * Deliveries told with the router's wake (docs/architecture.md, "Inbox logs"): the inbox's
 * writer keeps what each batch appended (`ToldBatches`), the router sends it with its wake,
 * and the agent's reader takes the entries from there (`OfferedBatches`) when they continue
 * exactly where its last read ended, instead of reading them back from the log.
 */

/**
 * One batch appended to an inbox log, durably (`.synced` names it), as its writer knows it:
 * the segment file, the byte offset where the batch begins and where each entry's line
 * ends, and the entries.
 */
export interface DeliveryHint {
  agent: string;
  file: string;
  start: number;
  ends: number[];
  entries: { seq: number; message: HiveMessage }[];
}

/** At most this many batches wait on either side (more: the oldest go, and the reader reads the log). */
const MAX_BATCHES = 64;

/** The writer's side: the batches appended since they were last taken, oldest first. */
export class ToldBatches {
  private told: DeliveryHint[] = [];

  constructor(private readonly agent: string) {}

  add(file: string, start: number, lines: string[], entries: DeliveryHint['entries']): void {
    if (this.told.length >= MAX_BATCHES) this.told = []; // the reader finds the chain broken and reads the log
    const ends: number[] = [];
    let at = start;
    for (const l of lines) ends.push((at += Buffer.byteLength(l)));
    this.told.push({ agent: this.agent, file, start, ends, entries });
  }

  take(): DeliveryHint[] {
    const told = this.told;
    this.told = [];
    return told;
  }
}

/** Where a reader's last read ended: the next line of `file` at `offset` has seq `seq`. */
export interface ReadPosition {
  file: string;
  offset: number;
  seq: number;
}

/** The reader's side: the batches told to it, and whether something untold may have come. */
export class OfferedBatches {
  private offered: DeliveryHint[] = [];
  /** Something may have been delivered that was not told (a wake from elsewhere, the poll, a start). */
  private untold = true;

  offer(hint: DeliveryHint): void {
    if (this.offered.length >= MAX_BATCHES) {
      this.offered = [];
      this.untold = true;
    }
    this.offered.push(hint);
  }

  /** There may be entries no one told of: the next read reads the log. */
  lookAgain(): void {
    this.untold = true;
  }

  /** A read of the log up to `.synced` begins: it sees everything delivered before it. */
  reading(): void {
    this.untold = false;
  }

  /**
   * Up to `limit` told entries from `at` on, each with where its line ends, when they
   * continue exactly there (same segment, offset and seq) and nothing untold may lie in
   * between; null: read the log.
   */
  continuing(at: ReadPosition, limit: number): { seq: number; message: HiveMessage; end: number }[] | null {
    while (this.offered.length > 0 && this.offered[0]!.entries.at(-1)!.seq < at.seq) this.offered.shift();
    if (this.untold || this.offered.length === 0) return null;
    const out: { seq: number; message: HiveMessage; end: number }[] = [];
    let { offset, seq } = at;
    for (const h of this.offered) {
      if (out.length >= limit) break;
      const i = seq - h.entries[0]!.seq;
      if (h.file !== at.file || i < 0 || i >= h.entries.length || (i === 0 ? h.start : h.ends[i - 1]) !== offset) return null;
      for (let k = i; k < h.entries.length && out.length < limit; k++) {
        out.push({ ...h.entries[k]!, end: h.ends[k]! });
        offset = h.ends[k]!;
        seq = h.entries[k]!.seq + 1;
      }
    }
    return out;
  }
}
