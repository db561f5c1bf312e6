import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { fsyncDir, readJsonFile, syncFd, writeJsonAtomic, writeTempFile } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import { hiveModes } from '../fs/modes.ts';
import { MarkerFile, readMarker } from '../fs/marker.ts';
import { openFiles, type Reopenable } from '../fs/open-files.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { encodeCommitLine, type SessionTurn, type StateFile } from './commit-line.ts';
import { readStateFile, scanWal } from './state-read.ts';

/** The commit log is opened read-write, never through a symlink, never waiting on a FIFO. */
const WAL_OPEN_FLAGS = fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

export { encodeCommitLine, decodeCommitLines, decodeCommitLinesAt, decodeCommitRun, type SessionTurn, type StateFile } from './commit-line.ts';
export { readStateFile, stateWalEnd } from './state-read.ts';

/**
 * An agent's committed state: `state.json` (a checkpoint, replaced atomically) plus
 * `state.wal` (commits since the checkpoint).
 *
 * A commit is one line `<digest> <json>\n` holding the whole persisted context (cursor,
 * brain state, durable timers) and the turn's outgoing messages, written with one pwrite
 * and one fdatasync. The valid line with the highest commit number wins; a torn line
 * fails its digest and is ignored (that turn was never committed, so none of its effects
 * were written). Lines are self-contained: restore replays nothing, it reads one.
 *
 * The log is preallocated (`walBytes`, zero-filled and fsynced once) and written in
 * place, so a commit changes no metadata and fdatasync is a pure data flush: cheaper than
 * an append (the size changes, so the journal commits) and far cheaper than a temp file +
 * fsync + rename + directory fsync (README, "Performance"). When the next
 * line does not fit, the state is checkpointed into state.json atomically and writing
 * starts again at offset 0; older lines carry commit numbers ≤ the checkpoint's and are
 * skipped.
 */

const MIN_WAL_BYTES = 64 * 1024;
const MAX_WAL_BYTES = 1024 * 1024;

/** The size of an agent's log as it is (a power of two from 64 KiB to 1 MiB), else 64 KiB. */
function presentWalSize(file: string): number {
  try {
    const size = fs.statSync(file).size;
    if (size >= MIN_WAL_BYTES && size <= MAX_WAL_BYTES && (size & (size - 1)) === 0) return size;
  } catch {
    // no log yet
  }
  return MIN_WAL_BYTES;
}

/** A commit encoded and not yet written (`StateStore.prepare`). */
export interface PreparedCommit {
  record: StateFile;
  line: Buffer;
  wraps: boolean;
}

/** Writes commits for one agent. One writer per agent (the actor that owns it). */
export class StateStore implements Reopenable {
  private fd: number | null = null;
  private offset = 0;
  private commit: number;
  private readonly p;

  private readonly committed: MarkerFile;

  private walBytes: number;

  /**
   * `beforeWrap` runs before a checkpoint lets the log be written over from its start (the
   * actor writes the messages the router has not routed yet as outbox files there) and
   * returns how far behind the router was (messages written, or waited for): when it was,
   * the log doubles (up to 1 MiB) at that checkpoint, so a busy agent's log holds what the
   * router has yet to read, and an idle one stays small. `walBytes` (default: the log's
   * present size, else 64 KiB) fixes the size.
   */
  constructor(
    private readonly root: string,
    readonly agentId: string,
    lastCommit: number,
    walBytes?: number,
    private readonly beforeWrap: () => number = () => 0,
  ) {
    this.p = agentPaths(root, agentId);
    this.commit = lastCommit;
    this.committed = new MarkerFile(this.p.committed, 64);
    this.fixedSize = walBytes !== undefined;
    this.walBytes = walBytes ?? presentWalSize(this.p.stateWal);
    this.emitted = lastCommit === 0 ? null : undefined;
  }

  /**
   * The router's mark (agents/<id>/routed) at which every message committed so far is
   * routed: null when no commit held one, undefined when unknown (commits made before this
   * store was opened may hold some).
   */
  emittedThrough(): { commit: number; index: number } | null | undefined {
    return this.emitted;
  }

  private emitted: { commit: number; index: number } | null | undefined;

  private readonly fixedSize: boolean;

  /**
   * Marks `commit` as on stable storage (\`agents/<id>/committed\`, not flushed: it only
   * ever names durable commits). The router routes a commit's messages only once marked.
   * At start the actor flushes the log and marks what it restored.
   */
  markCommitted(commit: number): void {
    this.committed.writeFollowing({ commit });
  }

  /**
   * Start: the log's content made durable (a killed process may have left it in the page
   * cache only), then marked. Nothing to do when the marker already names the last commit
   * (it is written only after that commit's flush) or when there is no commit yet (no
   * marker and commit 0 mean the same to the router): a restart of 10,000 agents made
   * 10,000 flushes and marker writes for nothing.
   */
  markRestored(): void {
    const marked = (readMarker(this.p.committed) as { commit?: unknown } | null)?.commit;
    if (marked === this.commit || (this.commit === 0 && marked === undefined)) return;
    try {
      const fd = fs.openSync(this.p.stateWal, WAL_OPEN_FLAGS);
      try {
        syncFd(fd, true);
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // no log yet
    }
    this.markCommitted(this.commit);
  }

  /**
   * The next commit's record and line, not written yet, and whether writing it checkpoints
   * (the line does not fit: the log wraps). `write` commits it; nothing else may commit in
   * between (one writer per agent).
   */
  prepare(next: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): PreparedCommit {
    // Numbered once written: a write that fails (a full disk) and is tried again keeps its number.
    const record = this.record(next, messages, session);
    const line = encodeCommitLine(record);
    if (line.length > this.walBytes / 2) return { record, line, wraps: true };
    if (this.fd === null && !this.offsetKnown && !fs.existsSync(this.p.stateWal)) return { record, line, wraps: false }; // write creates it
    this.open();
    return { record, line, wraps: this.offset + line.length > this.walBytes };
  }

  /** Commits a prepared record durably: one pwrite + fdatasync, or a checkpoint when it wraps. */
  write({ record, line, wraps }: PreparedCommit): StateFile {
    if (record.commit !== this.commit + 1) throw new HiveError('E_CONFLICT', `commit ${record.commit} of agent "${this.agentId}" was prepared before commit ${this.commit}`);
    if (wraps) {
      this.checkpoint(record, line.length);
      return this.written(record);
    }
    if (this.fd === null && !this.offsetKnown && this.createWith(line)) {
      this.offset = line.length;
    } else {
      const fd = this.open();
      fs.writeSync(fd, line, 0, line.length, this.offset);
      syncFd(fd, true);
      this.offset += line.length;
    }
    this.commit = record.commit;
    crashPoint('commit.before-mark'); // flushed, not marked: the next start marks it (markRestored)
    this.markCommitted(record.commit);
    return this.written(record);
  }

  /** Commits `next` and the turn's messages durably (`prepare`, then `write`). */
  append(next: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): StateFile {
    return this.write(this.prepare(next, messages, session));
  }

  /** Where the log's newest line ends: where the next commit goes (0 after a checkpoint). */
  get logEnd(): number {
    return this.offset;
  }

  private written(record: StateFile): StateFile {
    const count = record.lastTurn.messages.length;
    if (count > 0) this.emitted = { commit: record.commit, index: count };
    return record;
  }

  /**
   * Writes `record` as state.json atomically; the log starts again at offset 0. The log
   * doubles (up to 1 MiB) when the router was behind, and until it holds four lines the
   * size of `lineBytes` (the one that did not fit): a turn of a big batch (turnBatch 128
   * replies is ~50 KB) would otherwise checkpoint every commit, two flushes and a rename
   * instead of one flush.
   */
  checkpoint(record: StateFile, lineBytes = 0): void {
    const spilled = this.beforeWrap();
    writeJsonAtomic(this.p.state, record);
    this.commit = Math.max(this.commit, record.commit);
    this.offset = 0;
    this.markCommitted(record.commit);
    if (this.fixedSize) return;
    const before = this.walBytes;
    if (spilled > 0) this.walBytes = Math.min(MAX_WAL_BYTES, this.walBytes * 2);
    while (lineBytes * 4 > this.walBytes && this.walBytes < MAX_WAL_BYTES) this.walBytes *= 2;
    if (this.walBytes !== before) this.close(); // the next append preallocates the bigger log (open)
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    this.offsetKnown = false;
    openFiles.closed(this);
    this.committed.close();
  }

  /** The thread has too many files open: the log's descriptor goes, its write offset stays known (src/fs/open-files.ts). */
  closeIdle(): boolean {
    if (this.fd === null) return true;
    fs.closeSync(this.fd);
    this.fd = null;
    this.offsetKnown = true;
    return true;
  }

  /**
   * `offset` is where the next line goes although the log is closed (let go by `closeIdle`;
   * a checkpoint meanwhile moves it to 0): this store is the log's only writer, so it is
   * opened again without a scan.
   */
  private offsetKnown = false;

  /**
   * An agent's first commit creates its log with the line already in it: one write of the
   * whole preallocated log, its fsync and the folder's, two flushes in a row where
   * preallocating first and then writing the line took three (the first turn of each of
   * 10,000 agents paid them). False when the log exists (`open` then writes the line).
   * A crash before the folder's flush may leave the log short or empty: `open` makes it
   * again at the next commit (a log of the wrong size), keeping a whole line in it.
   */
  private createWith(line: Buffer): boolean {
    let fd: number;
    try {
      fd = fs.openSync(this.p.stateWal, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, hiveModes().file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    try {
      const log = Buffer.alloc(this.walBytes);
      line.copy(log);
      // A full disk can take part of a write without an error: the rest is written, or the
      // write fails (ENOSPC) and the log goes, so a retry creates it again.
      for (let at = 0; at < log.length; ) {
        const n = fs.writeSync(fd, log, at, log.length - at, at);
        if (n <= 0) throw new HiveError('E_IO', `Cannot write ${this.p.stateWal}: ${at} of ${log.length} bytes written`);
        at += n;
      }
      syncFd(fd);
      fsyncDir(this.p.dir);
    } catch (err) {
      fs.closeSync(fd);
      fs.rmSync(this.p.stateWal, { force: true });
      throw err;
    }
    this.fd = fd;
    openFiles.used(this);
    return true;
  }

  /** Opens the log, creating and preallocating it on first use, and finds the write offset. */
  private open(): number {
    if (this.fd !== null) {
      openFiles.used(this);
      return this.fd;
    }
    const known = this.offsetKnown;
    this.offsetKnown = false;
    let size = -1;
    try {
      // lstat: a symlink or FIFO in the log's place is not the log; a new one replaces it (rename).
      const st = fs.lstatSync(this.p.stateWal);
      size = st.isFile() ? st.size : -1;
    } catch {
      size = -1;
    }
    if (size !== this.walBytes) {
      const tmp = `${this.p.stateWal}.prealloc`;
      writeTempFile(tmp, Buffer.alloc(this.walBytes), { durable: true });
      // Keep committed lines of an older log (another size) by checkpointing them first.
      const current = readStateFile(this.root, this.agentId);
      if (current && size > 0) writeJsonAtomic(this.p.state, current);
      fs.renameSync(tmp, this.p.stateWal);
      fsyncDir(this.p.dir);
      this.offset = 0;
    } else if (!known) {
      let checkpointCommit = -1;
      try {
        checkpointCommit = readJsonFile<StateFile>(this.p.state)?.commit ?? -1;
      } catch {
        checkpointCommit = -1;
      }
      this.offset = scanWal(this.p.stateWal, this.agentId, checkpointCommit).end;
    }
    this.fd = fs.openSync(this.p.stateWal, WAL_OPEN_FLAGS);
    openFiles.used(this);
    return this.fd;
  }

  private record(next: PersistedAgentContext, messages: HiveMessage[], session?: SessionTurn[]): StateFile {
    return {
      version: 1,
      agent: this.agentId,
      commit: this.commit + 1,
      cursor: next.cursor,
      snapshot: { value: 'idle', context: next },
      lastTurn: { cursor: next.cursor, messages, ...(session && session.length > 0 ? { session } : {}) },
      committed_at: new Date().toISOString(),
    };
  }
}
