import type { HiveMessage } from '../protocol/message.ts';
import { decodeEntryLine, splitLines } from './inbox-log.ts';

/**
 * Deliveries told with the router's wake (docs/architecture.md, "Inbox logs"): the inbox's
 * writer keeps what each batch appended (`ToldBatches`), the router sends it with its wake,
 * and the agent's reader takes the entries from there (`OfferedBatches`) when they continue
 * exactly where its last read ended, instead of reading them back from the log.
 */

/**
 * One batch appended to an inbox log, durably (`.synced` names it), as its writer knows it:
 * the segment file, the byte offset where it begins, the seq of its first entry and its
 * lines as written (text: cheap to pass between threads; the reader checks and parses them
 * as it would have read them).
 */
export interface DeliveryHint {
  agent: string;
  file: string;
  start: number;
  seq: number;
  text: string;
}

/** A told entry, parsed, with where its line ends in the segment. */
interface ToldEntry {
  seq: number;
  message: HiveMessage;
  end: number;
}

/** At most this many batches wait on either side (more: the oldest go, and the reader reads the log). */
const MAX_BATCHES = 64;
/** At most this much told text waits for a reader (~1 MiB): past it the reader drops it all and reads the log. */
const MAX_HELD_CHARS = 1 << 20;

/** The writer's side: the batches appended since they were last taken, oldest first. */
export class ToldBatches {
  private told: DeliveryHint[] = [];

  constructor(private readonly agent: string) {}

  add(file: string, start: number, seq: number, text: string): void {
    if (this.told.length >= MAX_BATCHES) this.told = []; // the reader finds the chain broken and reads the log
    this.told.push({ agent: this.agent, file, start, seq, text });
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
  private offered: { hint: DeliveryHint; entries: ToldEntry[] | null }[] = [];
  /** Something may have been delivered that was not told (a wake from elsewhere, the poll, a start). */
  private untold = true;

  /** Characters of text held (an agent in a long turn is told of what it will read later). */
  private held = 0;

  offer(hint: DeliveryHint): void {
    if (this.offered.length >= MAX_BATCHES || this.held + hint.text.length > MAX_HELD_CHARS) {
      this.offered = [];
      this.held = 0;
      this.untold = true; // what is dropped is read from the log
    }
    this.offered.push({ hint, entries: null });
    this.held += hint.text.length;
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
   * between; null: read the log (which also dead-letters a line that does not check).
   */
  continuing(at: ReadPosition, where: string, limit: number): ToldEntry[] | null {
    while (this.offered.length > 0 && this.offered[0]!.hint.seq + lineCount(this.offered[0]!) <= at.seq) this.held -= this.offered.shift()!.hint.text.length;
    if (this.untold || this.offered.length === 0) return null;
    const out: ToldEntry[] = [];
    let { offset, seq } = at;
    for (const batch of this.offered) {
      if (out.length >= limit) break;
      if (batch.hint.file !== at.file) return null;
      const entries = (batch.entries ??= parse(batch.hint, where));
      const i = entries ? seq - batch.hint.seq : -1;
      if (!entries || i < 0 || i >= entries.length || (i === 0 ? batch.hint.start : entries[i - 1]!.end) !== offset) return null;
      for (let k = i; k < entries.length && out.length < limit; k++) {
        out.push(entries[k]!);
        offset = entries[k]!.end;
        seq = entries[k]!.seq + 1;
      }
    }
    return out;
  }
}

/** How many entries a told batch holds (its lines, parsed or not). */
function lineCount(batch: { hint: DeliveryHint; entries: ToldEntry[] | null }): number {
  if (batch.entries) return batch.entries.length;
  let n = 0;
  for (let i = batch.hint.text.indexOf('\n'); i >= 0; i = batch.hint.text.indexOf('\n', i + 1)) n++;
  return n;
}

/** A told batch's entries, checked and parsed as a read of the log would; null when a line does not check. */
function parse(hint: DeliveryHint, where: string): ToldEntry[] | null {
  const out: ToldEntry[] = [];
  for (const l of splitLines(Buffer.from(hint.text), hint.start, hint.seq)) {
    const d = decodeEntryLine(l.text, l.seq, where);
    if (!d.ok) return null;
    out.push({ seq: l.seq, message: d.message, end: l.end });
  }
  return out;
}
