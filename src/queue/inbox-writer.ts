import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { fsyncDirAsync, syncFd, syncFdAsync } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { ToldBatches, type DeliveryHint } from './told-deliveries.ts';
import { isRealDirectory } from '../fs/regular-file.ts';
import { MarkerFile } from '../fs/marker.ts';
import { openFiles, type Reopenable } from '../fs/open-files.ts';
import { hiveModes } from '../fs/modes.ts';
import { appendEvent } from '../log/event-log.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { plantActive } from '../testing/seams.ts';
import { committedCursor } from './committed-cursor.ts';
import { addRecent } from './recent-ids.ts';
import { recoverTail } from './inbox-reconcile.ts';
import { decodeEntryLine, encodeEntryLine, isRealSegment, listSegments, readSegmentFrom, segmentName, splitLines, SYNCED_NAME, type Segment } from './inbox-log.ts';

/**
 * The writing side of the inbox logs (docs/architecture.md, "Inbox logs"). The router is
 * the only writer of every inbox, so there is no lock, lease or token on the way: each
 * inbox has one `InboxWriter` in the router's transport, which keeps the last seq and the
 * ids it holds in memory and appends each batch with one write and one fdatasync.
 *
 * append(batch), one at a time per inbox:
 *   1. skip ids already in the log (reported `duplicate`), number the rest lastSeq+1...
 *   2. write their lines at the end of the current segment (a new segment when it is
 *      full: created, then its folder fsynced with the batch's flush)
 *   3. fdatasync the segment                       crash before: the lines may be there,
 *      but `.synced` does not name them, so no reader handles them; the next open
 *      flushes them, and the router's retry finds their ids (`duplicate`)
 *   4. rewrite `inbox/.synced` (in place, not flushed: it only ever names durable seqs)
 * Opening an inbox (the first batch after a start) is its recovery: trailing bytes that
 * are not valid lines are cut off (whole lines of junk are kept in dead-letter/ first; a
 * half line is a write cut short, logged), the last segment is flushed and `.synced`
 * rewritten.
 */

export type DeliveryOutcome = { id: string; status: 'delivered'; seq: number } | { id: string; status: 'duplicate' };

export interface InboxWriterOptions {
  /** Roll to a new segment once the current one holds this many bytes (default 1 MiB). */
  segmentBytes?: number;
  /** Processed entries kept for the duplicate check and for reading (default 5000). */
  doneCap?: number;
  /**
   * Another log of the same format than the agent's inbox (the supervisor's send log,
   * src/queue/send-log.ts): its folder, how people see it, and through which seq its
   * reader has handled entries (what compaction may drop). Default: the inbox and its
   * agent's committed cursor.
   */
  place?: LogPlace;
  /** Keep each batch appended for `takeTold` (the router's writers: their batches are told to the readers' hosts). */
  tell?: boolean;
}

export interface LogPlace {
  dir: string;
  /** Relative to the hive, for people: `agents/<id>/inbox`. */
  label: string;
  handledThrough: () => number;
}

const DEFAULT_SEGMENT_BYTES = 1 << 20;
export const DEFAULT_DONE_CAP = 5_000;

export class InboxWriter implements Reopenable {
  private readonly dir: string;
  private readonly segmentBytes: number;
  private readonly doneCap: number;
  private segments: Segment[] = [];
  private fd: number | null = null;
  private size = 0;
  private lastSeq = 0;
  /** The current segment was created since its folder was last flushed. */
  private dirDirty = false;
  private readonly ids = new Set<string>();
  private readonly synced: MarkerFile;
  private tail: Promise<unknown> = Promise.resolve();
  private opened = false;
  /** Batches being appended (the segment's descriptor is in use: it is not let go). */
  private appending = 0;
  /** The segment's descriptor was let go (too many files open): the next batch opens it again. */
  private letGo = false;
  private readonly label: string;
  private readonly handledThrough: () => number;

  constructor(
    private readonly root: string,
    private readonly agentId: string,
    options: InboxWriterOptions = {},
  ) {
    this.dir = options.place?.dir ?? agentPaths(root, agentId).inbox;
    this.label = options.place?.label ?? `agents/${agentId}/inbox`;
    this.handledThrough = options.place?.handledThrough ?? (() => committedCursor(root, agentId));
    this.segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.doneCap = options.doneCap ?? DEFAULT_DONE_CAP;
    this.synced = new MarkerFile(path.join(this.dir, SYNCED_NAME), 64);
    this.told = options.tell ? new ToldBatches(agentId) : null;
  }

  private readonly told: ToldBatches | null;

  /**
   * Appends a batch; one at a time per inbox (calls queue behind each other).
   * `inlineFlush`: the flush blocks this thread (nothing else waits on it: a routing pass
   * with one recipient) instead of a round trip through libuv's thread pool, two thread
   * wake-ups that cost more than the flush at light load.
   */
  append(messages: HiveMessage[], options: { inlineFlush?: boolean } = {}): Promise<DeliveryOutcome[]> {
    const run = this.tail.then(() => this.appendNow(messages, options.inlineFlush === true));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async appendNow(messages: HiveMessage[], inlineFlush: boolean): Promise<DeliveryOutcome[]> {
    this.appending++;
    try {
      return await this.appendBatch(messages, inlineFlush);
    } finally {
      this.appending--;
    }
  }

  private async appendBatch(messages: HiveMessage[], inlineFlush: boolean): Promise<DeliveryOutcome[]> {
    // lstat of both: an agent folder or an inbox that is a symlink could point anywhere
    // (lstat of the inbox alone would follow a symlinked agent folder); it is no inbox.
    if (!isRealDirectory(path.dirname(this.dir)) || !isRealDirectory(this.dir)) {
      this.close();
      throw new HiveError('E_UNKNOWN_AGENT', `Agent "${this.agentId}" has no ${path.basename(this.dir)} folder at ${this.dir}; create it with ensureAgent or \`hive spawn\``);
    }
    try {
      if (!this.opened) await this.open();
      else if (this.letGo && this.fd === null && !this.reopenSegment()) {
        // Not as it was left (changed by someone else): recovered like at a start.
        this.close();
        await this.open();
      }
      this.letGo = false;
      const outcomes: DeliveryOutcome[] = [];
      const fresh: { seq: number; message: HiveMessage }[] = [];
      const inBatch = new Set<string>();
      let seq = this.lastSeq;
      for (const m of messages) {
        if ((this.ids.has(m.id) && !plantActive('no-idempotency')) || inBatch.has(m.id)) {
          outcomes.push({ id: m.id, status: 'duplicate' });
          continue;
        }
        seq += 1;
        inBatch.add(m.id);
        fresh.push({ seq, message: m });
        outcomes.push({ id: m.id, status: 'delivered', seq });
      }
      if (fresh.length === 0) return outcomes;
      const text = fresh.map((f) => encodeEntryLine(f.seq, f.message)).join('');
      const data = Buffer.from(text);
      if (this.fd === null || (this.size > 0 && this.size + data.length > this.segmentBytes)) this.roll(fresh[0]!.seq);
      const start = this.size;
      writeAll(this.fd!, data, this.size);
      openFiles.used(this);
      this.size += data.length;
      crashPoint('deliver.after-append');
      if (inlineFlush && !this.dirDirty) syncFd(this.fd!, true);
      else await this.flush();
      crashPoint('deliver.after-sync');
      this.lastSeq = seq;
      for (const f of fresh) this.remember(f.message.id);
      this.synced.writeFollowing({ seq });
      const segment = this.segments.at(-1)?.file;
      if (segment) this.told?.add(segment, start, fresh[0]!.seq, text);
      return outcomes;
    } catch (err) {
      this.close(); // what is on disk is the truth: the next batch opens (recovers) again
      throw err;
    }
  }

  /** The batches appended (durably) since the last call, oldest first (none unless `tell`). */
  takeTold(): DeliveryHint[] {
    return this.told?.take() ?? [];
  }

  private async flush(): Promise<void> {
    const dir = this.dirDirty ? fsyncDirAsync(this.dir) : null;
    await Promise.all([syncFdAsync(this.fd!, true), dir]);
    this.dirDirty = false;
  }

  /** Starts segment `<firstSeq>.jsonl`; drops the oldest processed segments beyond the cap. */
  private roll(firstSeq: number): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    const seg = { first: firstSeq, name: segmentName(firstSeq), file: path.join(this.dir, segmentName(firstSeq)) };
    const flags = fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;
    try {
      this.fd = fs.openSync(seg.file, flags, hiveModes().file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Something is there under the new segment's name (left by hand, or an empty segment
      // of a killed router): moved aside, kept, and logged.
      const aside = `${seg.file}.foreign-${Date.now()}`;
      fs.renameSync(seg.file, aside);
      appendEvent(this.root, { type: 'inbox.foreign-entry', agent: this.agentId, name: seg.name, note: `in the way of a new segment: renamed to ${path.basename(aside)}` });
      this.fd = fs.openSync(seg.file, flags, hiveModes().file);
    }
    this.size = 0;
    this.dirDirty = true;
    this.segments.push(seg);
    this.compact();
  }

  /**
   * Removes whole segments that only hold entries the agent has handled and that are not
   * among the last `doneCap` of them (the duplicate check's horizon).
   */
  private compact(): void {
    if (this.segments.length < 3) return;
    const cursor = this.handledThrough();
    const keepFrom = cursor - this.doneCap; // entries with seq > keepFrom stay
    while (this.segments.length > 2) {
      const [oldest, next] = this.segments as [Segment, Segment];
      if (next.first - 1 > keepFrom) break; // the oldest holds an entry to keep
      fs.rmSync(oldest.file, { force: true });
      this.segments.shift();
    }
  }

  private remember(id: string): void {
    addRecent(this.ids, id, this.doneCap);
  }

  /** Recovery: reads the segments, cuts a torn tail, flushes the last segment, rewrites `.synced`. */
  private async open(): Promise<void> {
    const listed = listSegments(this.dir);
    const segments = listed.segments.filter((s) => isRealSegment(s) || (listed.foreign.push(s.name), false));
    for (const name of listed.foreign) appendEvent(this.root, { type: 'inbox.foreign-entry', agent: this.agentId, name, note: 'named like a segment but not one (not a regular file, or its first line is not its first entry): ignored' });
    this.segments = segments;
    this.ids.clear();
    this.lastSeq = 0;
    const last = segments.at(-1);
    for (const seg of segments) {
      const lines = splitLines(readSegmentFrom(seg.file, 0, `${this.label}/${seg.name}`), 0, seg.first);
      for (const l of lines) {
        const d = decodeEntryLine(l.text, l.seq, seg.name);
        if (d.ok) this.remember(d.message.id);
      }
      if (seg !== last) continue;
      ({ fd: this.fd, end: this.size, seq: this.lastSeq } = await recoverTail(this.root, this.agentId, this.label, seg, lines));
    }
    const floor = this.handledThrough();
    if (floor > this.lastSeq) {
      // The log lost entries its agent handled (a power cut on a disk that reorders, or a
      // segment removed by hand): go on after the cursor, never below it.
      appendEvent(this.root, { type: 'inbox.behind-cursor', agent: this.agentId, last: this.lastSeq, cursor: floor });
      this.lastSeq = floor;
      if (this.fd !== null) fs.closeSync(this.fd);
      this.fd = null;
    }
    this.synced.write({ seq: this.lastSeq });
    this.opened = true;
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    this.synced.close();
    this.opened = false;
    this.letGo = false;
    openFiles.closed(this);
  }

  /** Lets the current segment's descriptor go between batches (src/fs/open-files.ts); all else is kept. */
  closeIdle(): boolean {
    if (this.appending > 0) return false;
    if (this.fd === null) return true;
    fs.closeSync(this.fd);
    this.fd = null;
    this.letGo = true;
    return true;
  }

  /** The current segment opened again after `closeIdle`: false when it is not as it was left. */
  private reopenSegment(): boolean {
    const seg = this.segments.at(-1);
    let fd: number | null = null;
    try {
      if (seg) fd = fs.openSync(seg.file, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch {
      // gone, or not a file to open: recovered instead
    }
    const st = fd === null ? null : fs.fstatSync(fd);
    if (st?.isFile() && st.size === this.size) this.fd = fd;
    else if (fd !== null) fs.closeSync(fd);
    return this.fd !== null;
  }
}

function writeAll(fd: number, data: Buffer, position: number): void {
  let off = 0;
  while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off, position + off);
}
