import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { MarkerFile, readMarker } from '../fs/marker.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { CommitHint } from './transport.ts';
import { decodeCommitLines, decodeCommitLinesAt, decodeCommitRun, type StateFile } from '../agent/state-store.ts';
import { openRegular } from '../fs/regular-file.ts';

/**
 * The transactional outbox (docs/architecture.md, "The commit record is the outbox"): an
 * agent actor's emitted messages are read by the router from its commit records
 * (`state.wal`, and `state.json` at a checkpoint) instead of from outbox files. Two
 * markers, each rewritten in place and never flushed:
 *
 *   agents/<id>/committed   {"commit":N}: the newest commit on stable storage (the actor
 *                           writes it after its fdatasync, and again at every start), so
 *                           the router never routes a turn a power cut could undo
 *   agents/<id>/routed      {"commit":C,"index":I}: the router's progress: every message
 *                           before message I of commit C is routed. Lost or stale, it only
 *                           makes the router route again what it routed (dropped as
 *                           duplicates by the inboxes).
 *
 * Before the log wraps at a checkpoint, the actor writes the messages of commits the router
 * has not reached as outbox files (durably): nothing is ever only in a line about to be
 * overwritten (StateStore.checkpoint).
 */

export interface RoutedMark {
  commit: number;
  index: number;
}

/**
 * Markers last found missing (an external agent never commits, a new one has not yet):
 * looked for with an lstat that makes no error object until one appears, instead of a
 * failed open per routing pass. Room for both markers of 16,384 agents (it held 4,096 and
 * was cleared when full: a new hive of 10,000 agents has 20,000 missing markers).
 */
const missingMarks = new Set<string>();
const MISSING_MARKS_CAP = 32_768;

function readMark<T>(file: string): T | null {
  if (missingMarks.has(file)) {
    if (fs.lstatSync(file, { throwIfNoEntry: false }) === undefined) return null;
    missingMarks.delete(file);
  }
  const mark = readMarker(file) as T | null;
  if (mark === null && fs.lstatSync(file, { throwIfNoEntry: false }) === undefined) {
    if (missingMarks.size >= MISSING_MARKS_CAP) missingMarks.clear();
    missingMarks.add(file);
  }
  return mark;
}

/** The newest durable commit of an agent (0 when it never wrote one, or -1 when it has no marker). */
export function readCommitted(root: string, agentId: string): number {
  const m = readMark<{ commit?: unknown }>(agentPaths(root, agentId).committed);
  return m && Number.isInteger(m.commit) ? (m.commit as number) : -1;
}

/** Where the router's routing of an agent's commit records stands (commit 0: nothing routed). */
export function readRouted(root: string, agentId: string): RoutedMark {
  const m = readMark<{ commit?: unknown; index?: unknown }>(agentPaths(root, agentId).routed);
  if (m && Number.isInteger(m.commit) && Number.isInteger(m.index)) return { commit: m.commit as number, index: m.index as number };
  return { commit: 0, index: 0 };
}

export function isAfter(a: RoutedMark, b: RoutedMark): boolean {
  return a.commit > b.commit || (a.commit === b.commit && a.index > b.index);
}

/** What routing needs of a commit record: its number and the messages its turn emitted. */
export type RoutableCommit = { commit: number; lastTurn: { messages: HiveMessage[] } };

export interface CommittedMessage {
  /** `@<commit>.<index>`: the ref the router settles. */
  ref: string;
  mark: RoutedMark;
  message: HiveMessage;
}

/** Every commit record an agent's files still hold (the checkpoint and the log's valid lines), oldest first. */
export function committedRecords(root: string, agentId: string): StateFile[] {
  let buf: Buffer | null = null;
  try {
    buf = readRegularFile(agentPaths(root, agentId).stateWal);
  } catch {
    buf = null; // no log yet
  }
  return withCheckpoint(root, agentId, buf ? decodeCommitLines(buf, agentId) : []);
}

/** The checkpoint (state.json) and the log's records, one per commit, oldest first. */
function withCheckpoint(root: string, agentId: string, fromLog: StateFile[]): StateFile[] {
  const records: StateFile[] = [];
  try {
    const checkpoint = readJsonFile<StateFile>(agentPaths(root, agentId).state);
    if (checkpoint && checkpoint.agent === agentId) records.push(checkpoint);
  } catch {
    // an unreadable checkpoint holds nothing to route; the actor reports it at its start
  }
  records.push(...fromLog);
  const byCommit = new Map<number, StateFile>();
  for (const r of records) byCommit.set(r.commit, r);
  return [...byCommit.values()].sort((a, b) => a.commit - b.commit);
}

/**
 * Reads one agent's commit records for the router without parsing the whole log each pass:
 * it remembers where the last line it read ended, and reads on from there while the lines
 * there continue the commit numbers. Anything else (the log wrapped at a checkpoint, a
 * restart) reads everything again.
 */
/** How much of the log a continuing read takes at a time (it doubles for a longer line). */
const RUN_CHUNK_BYTES = 64 * 1024;

export class CommitLogTail {
  private offset = 0;
  private last = -1;
  /** Records read and not fully routed yet (commit ≥ the routed mark's). */
  private kept: RoutableCommit[] = [];

  constructor(
    private readonly root: string,
    private readonly agentId: string,
  ) {}

  /** The newest commit read (or told of), -1 before the first read. */
  get newest(): number {
    return this.last;
  }

  /**
   * Takes commits as their writer told of them (Transport.offerCommits) instead of reading
   * their lines, all or none: only when they follow the newest one known one by one (the
   * first is the next commit, none is missing, none is known already: a number known
   * already may be a log that went back and numbers again), and the last one's `end` is
   * where the next read goes on. Returns false when it took none (the next `records` reads
   * the log). Never before a first read: that read takes the checkpoint too.
   */
  accept(hints: readonly CommitHint[]): boolean {
    if (this.last < 0 || hints.some((h, i) => h.commit !== this.last + 1 + i)) return false;
    for (const h of hints) this.kept.push({ commit: h.commit, lastTurn: { messages: h.messages } });
    this.offset = hints.at(-1)!.end;
    this.last = hints.at(-1)!.commit;
    return true;
  }

  /** The records not fully routed (commit ≥ `routedCommit`), as far as the log holds them. */
  records(through: number, routedCommit: number): RoutableCommit[] {
    this.kept = this.kept.filter((r) => r.commit >= routedCommit);
    if (this.last >= 0 && through <= this.last) return this.kept;
    if (this.last >= 0) {
      const fresh = this.readRun(this.offset, this.last + 1);
      if (fresh.length > 0) {
        this.offset = fresh.at(-1)!.end;
        this.last = fresh.at(-1)!.record.commit;
        this.kept.push(...fresh.map((l) => l.record));
      }
      // The log ran out before `through`: the next commit went to state.json at a checkpoint.
      if (through <= this.last) return this.kept;
    }
    const lines = this.readFrom(0); // the log read once: its records and where its newest line ends
    const all = withCheckpoint(this.root, this.agentId, lines.map((l) => l.record));
    const tail = lines.filter((l) => l.record.commit === all.at(-1)?.commit).at(-1);
    const newest = all.at(-1)?.commit ?? -1;
    // Read on from the newest line next time; when the newest is in state.json (a checkpoint
    // let the log start over), the next commit goes to the log's start.
    this.offset = tail && tail.record.commit === newest ? tail.end : 0;
    this.last = newest;
    this.kept = all.filter((r) => r.commit >= routedCommit);
    return this.kept;
  }

  /**
   * The lines from `offset` on that continue the commit numbers from `first`, read in
   * chunks: the log is preallocated, and past the newest line lie zeros or the older lines
   * of a previous pass, which are not read (once they were parsed and hashed on every pass).
   */
  private readRun(offset: number, first: number): { record: StateFile; end: number }[] {
    let fd: number;
    let size: number;
    try {
      ({ fd, stats: { size } } = openRegular(agentPaths(this.root, this.agentId).stateWal));
    } catch {
      return [];
    }
    const out: { record: StateFile; end: number }[] = [];
    try {
      let pos = offset;
      let chunk = RUN_CHUNK_BYTES;
      while (pos < size) {
        const buf = Buffer.allocUnsafe(Math.min(chunk, size - pos));
        const n = fs.readSync(fd, buf, 0, buf.length, pos);
        const run = decodeCommitRun(buf.subarray(0, n), this.agentId, first + out.length);
        for (const l of run.lines) out.push({ record: l.record, end: l.end + pos });
        if (run.complete || pos + n >= size) break;
        const consumed = run.lines.at(-1)?.end ?? 0;
        if (consumed === 0) chunk *= 2; // a line longer than the chunk
        pos += consumed;
      }
    } finally {
      fs.closeSync(fd);
    }
    return out;
  }

  private readFrom(offset: number): { record: StateFile; end: number }[] {
    let fd: number;
    let size: number;
    try {
      ({ fd, stats: { size } } = openRegular(agentPaths(this.root, this.agentId).stateWal));
    } catch {
      return [];
    }
    try {
      const buf = Buffer.allocUnsafe(Math.max(0, size - offset));
      const n = buf.length > 0 ? fs.readSync(fd, buf, 0, buf.length, offset) : 0;
      return decodeCommitLinesAt(buf.subarray(0, n), this.agentId).map((l) => ({ record: l.record, end: l.end + offset }));
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** The messages of commits after `after` and at most `through`, in order. */
export function unroutedMessages(records: readonly RoutableCommit[], after: RoutedMark, through: number, limit = Infinity): CommittedMessage[] {
  const out: CommittedMessage[] = [];
  for (const r of records) {
    if (r.commit < after.commit || r.commit > through) continue;
    const messages = r.lastTurn?.messages ?? [];
    for (let i = 0; i < messages.length; i++) {
      const mark = { commit: r.commit, index: i };
      if (mark.commit === after.commit && mark.index < after.index) continue; // routed already
      out.push({ ref: `@${r.commit}.${i}`, mark, message: messages[i]! });
      if (out.length >= limit) return out;
    }
  }
  return out;
}

/** Where a pending item came from, as an operator finds it: an outbox file, a send log entry, a message of a commit record, or a hive.send() routed straight from memory. */
export function sourceOf(sender: string, ref: string): string {
  if (/^#\d+$/.test(ref)) return `agents/${sender}/sendlog (entry ${ref.slice(1)})`;
  if (/^!\d+$/.test(ref)) return `hive.send() by ${sender}`;
  const mark = parseCommitRef(ref);
  return mark ? `agents/${sender}/state.wal (commit ${mark.commit}, message ${mark.index + 1})` : `agents/${sender}/outbox/${ref}`;
}

export function parseCommitRef(ref: string): RoutedMark | null {
  const m = /^@(\d+)\.(\d+)$/.exec(ref);
  return m ? { commit: Number(m[1]), index: Number(m[2]) } : null;
}

/**
 * Marker files kept open by one writer (the actor's `committed`, the router's `routed`).
 * How many stay open is the thread's open-files registry's business (src/fs/open-files.ts):
 * a marker past its cap lets its descriptor go and opens it again at its next write.
 */
export class MarkWriter {
  private readonly markers = new Map<string, MarkerFile>();

  write(file: string, value: unknown): void {
    let m = this.markers.get(file);
    if (!m) this.markers.set(file, (m = new MarkerFile(file, 64)));
    m.writeFollowing(value);
  }

  close(): void {
    for (const m of this.markers.values()) m.close();
    this.markers.clear();
  }
}
