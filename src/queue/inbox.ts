import { agentPaths } from '../layout/paths.ts';
import type { HiveError } from '../errors.ts';
import { assertRealDirectory } from '../fs/regular-file.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { OfferedBatches, type DeliveryHint } from './told-deliveries.ts';
import { deadLetterData } from './dead-letter.ts';
import { committedCursor } from './committed-cursor.ts';
import { decodeEntryLine, isRealSegment, listSegments, readSegmentFrom, readSynced, splitLines, type Segment } from './inbox-log.ts';

/**
 * The reading side of an inbox log (format: src/queue/inbox-log.ts). Readers never go past
 * `inbox/.synced`, so an entry is handled only once it is on stable storage. An agent
 * keeps one `InboxReader`, which remembers where its last read ended: a turn reads only
 * the bytes of its own entries, however long the segment.
 */

export interface InboxEntry {
  seq: number;
  id: string;
  /** Where the entry is, for people: `agents/<id>/inbox/<segment>#<seq>`. */
  ref: string;
  message: HiveMessage;
  /**
   * The same message id at an earlier seq of this inbox, which a single writer never makes
   * but a JetStream inbox can hold (a chained publish let through twice, nats-server issue
   * 4320): the agent moves its cursor past it without handling it.
   */
  duplicate?: true;
}

export interface RejectedInboxLine {
  seq: number;
  ref: string;
  /** The line as it is in the log. */
  text: string;
  error: HiveError;
}

export interface InboxRead {
  entries: InboxEntry[];
  /** Lines that are not valid entries (torn, edited by hand): dead-letter them. */
  rejected: RejectedInboxLine[];
}

/** Bytes read at a time; doubled while a single line does not fit. */
const CHUNK = 64 * 1024;

export class InboxReader {
  private readonly dir: string;
  private segments: Segment[] = [];
  /** Where the last read ended: the next line of `file` at `offset` has seq `seq`. */
  private pos: { file: string; offset: number; seq: number; index: number } | null = null;

  private readonly label: string;

  constructor(
    private readonly root: string,
    readonly agentId: string,
    /** Another log of the inbox format (the send log): its folder and label. */
    place?: { dir: string; label: string },
  ) {
    this.dir = place?.dir ?? agentPaths(root, agentId).inbox;
    this.label = place?.label ?? `agents/${agentId}/inbox`;
  }

  /** What the inbox's writer told of with the router's wakes (src/queue/told-deliveries.ts). */
  private readonly told = new OfferedBatches();

  /** A batch delivered durably, as the router told it: a read that goes on where the last one ended takes it from here, with no look at the folder, `.synced` or the segment. */
  offer(hint: DeliveryHint): void {
    this.told.offer(hint);
  }

  /** There may be entries no one told of: the next read reads the log. */
  lookAgain(): void {
    this.told.lookAgain();
  }

  /** The told entries after `afterSeq` when they continue where the last read ended; null: read the log. */
  private fromTold(afterSeq: number, limit: number): InboxEntry[] | null {
    const pos = this.pos;
    const seg = pos ? this.segments[pos.index] : undefined;
    if (!pos || pos.seq !== afterSeq + 1 || seg?.file !== pos.file) return null;
    const told = this.told.continuing(pos, `${this.label}/${seg.name}`, limit);
    if (!told || told.length === 0) return null;
    this.pos = { ...pos, offset: told.at(-1)!.end, seq: told.at(-1)!.seq + 1 };
    return told.map((e) => ({ seq: e.seq, id: e.message.id, ref: `${this.label}/${seg.name}#${e.seq}`, message: e.message }));
  }

  /** Entries with seq > afterSeq, up to `.synced`, in order. */
  read(afterSeq: number, limit = Infinity): InboxRead {
    const told = this.fromTold(afterSeq, limit);
    if (told) return { entries: told, rejected: [] };
    this.told.reading();
    assertRealDirectory(agentPaths(this.root, this.agentId).dir, `agents/${this.agentId}`);
    assertRealDirectory(this.dir, this.label);
    const out: InboxRead = { entries: [], rejected: [] };
    const synced = readSynced(this.dir);
    if (synced <= afterSeq) return out;
    let at = this.pos?.seq === afterSeq + 1 && this.segments[this.pos.index]?.file === this.pos.file ? this.pos : this.locate(afterSeq + 1);
    while (at && out.entries.length + out.rejected.length < limit && at.seq <= synced) {
      const seg = this.segments[at.index]!;
      const where = `${this.label}/${seg.name}`;
      let chunk = CHUNK;
      let lines: ReturnType<typeof splitLines> = [];
      let eof = false;
      for (;;) {
        let buf: Buffer;
        try {
          buf = readSegmentFrom(seg.file, at.offset, where, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          buf = Buffer.alloc(0); // compacted away under us: go on with the next segment
        }
        lines = splitLines(buf, at.offset, at.seq);
        eof = buf.length < chunk;
        if (lines.length > 0 || eof) break;
        chunk *= 2;
      }
      for (const l of lines) {
        if (l.seq < afterSeq + 1) {
          at = { ...at, offset: l.end, seq: l.seq + 1 };
          continue;
        }
        if (l.seq > synced || out.entries.length + out.rejected.length >= limit) break;
        const ref = `${where}#${l.seq}`;
        const d = decodeEntryLine(l.text, l.seq, where);
        if (d.ok) out.entries.push({ seq: l.seq, id: d.message.id, ref, message: d.message });
        else out.rejected.push({ seq: l.seq, ref, text: l.text, error: d.error });
        at = { ...at, offset: l.end, seq: l.seq + 1 };
      }
      if (at.seq > synced || out.entries.length + out.rejected.length >= limit) break;
      if (!eof) continue;
      // The end of this segment: go on in the next one (listed again when not known yet).
      if (at.index + 1 >= this.segments.length) this.refresh();
      // The segment that begins where this one ends, or (a gap) the first one after that.
      let nextIndex = this.segments.findIndex((s) => s.first === at!.seq);
      if (nextIndex < 0) nextIndex = this.segments.findIndex((s) => s.first > at!.seq);
      if (nextIndex < 0) break;
      const next = this.segments[nextIndex]!;
      at = { file: next.file, offset: 0, seq: next.first, index: nextIndex };
    }
    this.pos = at;
    return out;
  }

  /**
   * Entries after `afterSeq`; lines that are not valid entries go to dead-letter with their
   * reason (an agent's read: a copy that cannot be written fails it, and the full-disk
   * machinery waits and tries again). `viewer`: a read to show the inbox (the inspector,
   * `hive inbox`, the chaos checks), which a copy that cannot be written (a hive the viewer
   * may not write) does not fail: the line stays in the log, left out of the entries, for
   * the agent's own read to copy.
   */
  readRejecting(afterSeq: number, limit = Infinity, options: { viewer?: boolean } = {}): InboxEntry[] {
    const { entries, rejected } = this.read(afterSeq, limit);
    for (const r of rejected) {
      try {
        deadLetterLine(this.root, this.agentId, r);
      } catch (err) {
        if (!options.viewer) throw err;
      }
    }
    return entries;
  }

  /** Names of segments checked to be real (isRealSegment), and of ones found not to be. */
  private readonly checked = new Map<string, boolean>();

  private refresh(): void {
    this.segments = listSegments(this.dir).segments.filter((s) => {
      let real = this.checked.get(s.name);
      if (real === undefined || !real) this.checked.set(s.name, (real = isRealSegment(s)));
      return real;
    });
  }

  /** The start of the segment holding `seq` (or of the first one after it: a gap). */
  private locate(seq: number): { file: string; offset: number; seq: number; index: number } | null {
    this.refresh();
    let index = -1;
    for (let i = 0; i < this.segments.length; i++) if (this.segments[i]!.first <= seq) index = i;
    if (index < 0) index = this.segments.length > 0 ? 0 : -1;
    if (index < 0) return null;
    const s = this.segments[index]!;
    return { file: s.file, offset: 0, seq: s.first, index };
  }
}

/** Stores a line that is not a valid entry in dead-letter/ (once: the key is the line's place). */
export function deadLetterLine(root: string, agentId: string, r: RejectedInboxLine): void {
  deadLetterData(root, `inbox-${agentId}-${r.seq}.json`, `${r.text}\n`, { error: r.error.message, code: r.error.code, source: r.ref });
}

/**
 * Reads entries with seq > `afterSeq`, in seq order (a one-off read: an agent keeps an
 * InboxReader instead).
 * @example const { entries } = readInbox(root, 'bob', committedCursor(root, 'bob'));
 */
export function readInbox(root: string, agentId: string, afterSeq: number, limit = Infinity): InboxRead {
  return new InboxReader(root, agentId).read(afterSeq, limit);
}

/** `readInbox` that moves lines that are not valid entries to dead-letter/ with their reason. */
export function readInboxRejecting(root: string, agentId: string, afterSeq: number, limit = Infinity): InboxEntry[] {
  return new InboxReader(root, agentId).readRejecting(afterSeq, limit);
}

export interface InboxRow extends InboxEntry {
  /** Handled: at or below the agent's committed cursor. */
  done: boolean;
}

/** Every entry the log still holds, handled and pending, for display (`hive inbox`, the inspector). */
export function listInbox(root: string, agentId: string): InboxRow[] {
  const cursor = committedCursor(root, agentId);
  let entries: InboxEntry[];
  try {
    entries = readInbox(root, agentId, 0).entries;
  } catch {
    return [];
  }
  return entries.map((e) => ({ ...e, done: e.seq <= cursor }));
}

/** The last seq delivered durably (0 when none). */
export function lastInboxSeq(root: string, agentId: string): number {
  return readSynced(agentPaths(root, agentId).inbox);
}

/** Number of pending entries after `afterSeq` (the inbox depth): one small read, whatever the backlog. */
export function inboxDepth(root: string, agentId: string, afterSeq: number): number {
  return Math.max(0, lastInboxSeq(root, agentId) - afterSeq);
}
