import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { fsyncDir, readJsonFile } from '../fs/atomic.ts';
import { isRealDirectory } from '../fs/regular-file.ts';
import { hiveModes } from '../fs/modes.ts';
import { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { InboxReader, type RejectedInboxLine } from './inbox.ts';
import { InboxWriter, type LogPlace } from './inbox-writer.ts';
import { MarkWriter } from './commit-outbox.ts';
import { writeOutbox } from './outbox.ts';
import { appendEvent } from '../log/event-log.ts';

/**
 * The supervisor's send log (docs/architecture.md, "The send log"): what `hive.send()`
 * accepts is appended to `agents/<sender>/sendlog/`, a log of the inbox format (segments,
 * checksummed lines, `.synced`), instead of one outbox file per message. One writer per
 * log: the supervisor's main thread, which holds `hive.lock`; everyone else (`hive send`,
 * a person's `cat > outbox/x.json`) still writes outbox files. Concurrent sends to one log
 * share one write and one fdatasync (a group commit). The router reads the log up to
 * `.synced` and keeps its progress in `sendlog/.routed` ({"seq":N}, rewritten in place,
 * not flushed: lost, the router routes again what it routed, and the inboxes drop those
 * as duplicates). Segments wholly routed are removed by the writer as it rolls.
 */

const ROUTED_NAME = '.routed';

export function sendLogPlace(root: string, sender: string): LogPlace {
  return { dir: agentPaths(root, sender).sendLog, label: `agents/${sender}/sendlog`, handledThrough: () => readSendRouted(root, sender) };
}

/** The seq through which the router has routed `sender`'s send log (0: nothing yet). */
export function readSendRouted(root: string, sender: string): number {
  const file = path.join(agentPaths(root, sender).sendLog, ROUTED_NAME);
  let v: { seq?: unknown } | undefined;
  try {
    // A regular file only; junk, an empty file (a power cut) or anything else reads as 0:
    // the router routes the log again and the inboxes drop what they hold.
    v = fs.lstatSync(file).isFile() ? readJsonFile<{ seq?: unknown }>(file) : undefined;
  } catch {
    v = undefined;
  }
  const seq = v?.seq;
  return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? seq : 0;
}

/**
 * The writing side, in the supervisor's main thread.
 * @example const log = new SendLog(root); await log.append([message]); // durable now
 */
export class SendLog {
  private readonly writers = new Map<string, InboxWriter>();
  /** Per sender: messages waiting for the flush in progress to end, and their callers. */
  private readonly waiting = new Map<string, { messages: HiveMessage[]; done: { resolve: () => void; reject: (e: unknown) => void }[] }>();
  private readonly busy = new Set<string>();
  private readonly flushing = new Set<Promise<void>>();
  private closed = false;

  /** True while sends go into the log (its writer checks the sender's folder at every group commit). */
  get open(): boolean {
    return !this.closed;
  }

  constructor(private readonly root: string) {}

  /** A send log over `root`, every sender's existing log recovered (see `recover`). */
  static async open(root: string, senders: Iterable<string>): Promise<SendLog> {
    const log = new SendLog(root);
    await log.recover(senders);
    return log;
  }

  /**
   * Sends one message (hive.send): into the log, or into an outbox file when the sender's
   * log is not a folder (a symlink or a FIFO someone put there is never written through).
   */
  async send(message: HiveMessage): Promise<void> {
    if (this.closed) {
      writeOutbox(this.root, [message]);
      return;
    }
    try {
      await this.append([message]);
    } catch (err) {
      // The folder is not one (E_NOT_REGULAR), or was replaced after it was opened (E_UNKNOWN_AGENT from the writer).
      if (!(err instanceof HiveError) || (err.code !== 'E_NOT_REGULAR' && err.code !== 'E_UNKNOWN_AGENT')) throw err;
      this.writers.get(message.from)?.close();
      this.writers.delete(message.from);
      if (!isRealDirectory(agentPaths(this.root, message.from).dir)) throw err;
      appendEvent(this.root, { type: 'sendlog.refused', agent: message.from, error: err.message });
      writeOutbox(this.root, [message]);
    }
  }

  /** Durably appends messages (grouped by sender); resolves once they are on stable storage. */
  append(messages: HiveMessage[]): Promise<void> {
    const bySender = new Map<string, HiveMessage[]>();
    for (const m of messages) {
      const list = bySender.get(m.from);
      if (list) list.push(m);
      else bySender.set(m.from, [m]);
    }
    return Promise.all([...bySender].map(([sender, ms]) => this.enqueue(sender, ms))).then(() => undefined);
  }

  private enqueue(sender: string, messages: HiveMessage[]): Promise<void> {
    return new Promise((resolve, reject) => {
      let w = this.waiting.get(sender);
      if (!w) this.waiting.set(sender, (w = { messages: [], done: [] }));
      w.messages.push(...messages);
      w.done.push({ resolve, reject });
      if (this.busy.has(sender)) return;
      const run = this.drain(sender);
      this.flushing.add(run);
      void run.finally(() => this.flushing.delete(run));
    });
  }

  /** One batch at a time per sender: everything that queued up meanwhile goes in the next. */
  private async drain(sender: string): Promise<void> {
    this.busy.add(sender);
    try {
      for (let w = this.waiting.get(sender); w; w = this.waiting.get(sender)) {
        this.waiting.delete(sender);
        if (this.closed) {
          for (const d of w.done) d.reject(new HiveError('E_STOPPED', 'The send log is closed (the supervisor stopped)'));
          continue;
        }
        try {
          await this.writerOf(sender).append(w.messages);
          for (const d of w.done) d.resolve();
        } catch (err) {
          for (const d of w.done) d.reject(err);
        }
      }
    } finally {
      this.busy.delete(sender);
    }
  }

  private writerOf(sender: string): InboxWriter {
    let w = this.writers.get(sender);
    if (w) return w;
    const p = agentPaths(this.root, sender);
    if (!isRealDirectory(p.dir)) throw new HiveError('E_UNKNOWN_AGENT', `Sender "${sender}" has no agent folder at ${p.dir}`);
    try {
      fs.mkdirSync(p.sendLog, { mode: hiveModes().dir });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // The folder's name is durable before anything in it is acknowledged (at every open:
    // a kill between a mkdir and its flush leaves a folder whose name is not).
    fsyncDir(p.dir);
    if (!isRealDirectory(p.sendLog)) throw new HiveError('E_NOT_REGULAR', `agents/${sender}/sendlog is not a folder (a symlink or a file is never written through)`);
    this.writers.set(sender, (w = new InboxWriter(this.root, sender, { place: sendLogPlace(this.root, sender) })));
    return w;
  }

  /**
   * At start, before the router runs: opens every sender's log that exists, which is its
   * recovery (a torn tail cut off, whole lines past `.synced` flushed and named by it).
   */
  async recover(senders: Iterable<string>): Promise<void> {
    for (const sender of senders) {
      const p = agentPaths(this.root, sender);
      if (isRealDirectory(p.dir) && isRealDirectory(p.sendLog)) await this.writerOf(sender).append([]);
    }
  }

  /** Waits for the flushes under way, then closes; later sends are outbox files (see `send`). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.flushing]);
    for (const w of this.writers.values()) w.close();
    this.writers.clear();
  }
}

export interface SendLogItem {
  ref: string;
  message: HiveMessage | null;
  rejected: RejectedInboxLine | null;
}

/** The reading side, in the router's transport: pending entries after `.routed`, and settling them. */
export class SendLogSource {
  private readonly readers = new Map<string, InboxReader>();
  private readonly routed = new Map<string, number>();
  private readonly marks = new MarkWriter();

  constructor(private readonly root: string) {}

  /** Entries of `sender`'s send log not routed yet, in order (none when it has no log). */
  pending(sender: string, limit: number): SendLogItem[] {
    const dir = agentPaths(this.root, sender).sendLog;
    // Only a real folder is a send log (a symlink or a file put there is never read; the
    // supervisor then writes outbox files instead, see Supervisor.send).
    if (!isRealDirectory(dir)) return [];
    let reader = this.readers.get(sender);
    if (!reader) {
      this.readers.set(sender, (reader = new InboxReader(this.root, sender, sendLogPlace(this.root, sender))));
    }
    const { entries, rejected } = reader.read(this.routedOf(sender), limit);
    const items: (SendLogItem & { seq: number })[] = [
      ...entries.map((e) => ({ seq: e.seq, ref: `#${e.seq}`, message: e.message, rejected: null })),
      ...rejected.map((r) => ({ seq: r.seq, ref: `#${r.seq}`, message: null, rejected: r })),
    ];
    return items.sort((a, b) => a.seq - b.seq);
  }

  /**
   * Marks entries as routed. The mark only moves over a run without holes: an entry whose
   * settle or reject failed (a dead-letter write that threw) is handed out again, and the
   * ones after it with it (the inboxes drop those as duplicates).
   */
  settle(sender: string, refs: string[]): void {
    const done = this.done.get(sender) ?? new Set<number>();
    for (const ref of refs) {
      const seq = parseSendRef(ref);
      if (seq !== null && seq > this.routedOf(sender)) done.add(seq);
    }
    let seq = this.routedOf(sender);
    while (done.delete(seq + 1)) seq += 1;
    this.done.set(sender, done);
    if (seq === this.routedOf(sender)) return;
    this.routed.set(sender, seq);
    this.marks.write(path.join(agentPaths(this.root, sender).sendLog, ROUTED_NAME), { seq });
  }

  /** Per sender: seqs settled beyond a hole. */
  private readonly done = new Map<string, Set<number>>();

  private routedOf(sender: string): number {
    let r = this.routed.get(sender);
    if (r === undefined) this.routed.set(sender, (r = readSendRouted(this.root, sender)));
    return r;
  }

  close(): void {
    this.marks.close();
    this.readers.clear();
  }
}

/** A send log entry's ref (`#<seq>`), or null for any other kind of ref. */
export function parseSendRef(ref: string): number | null {
  const m = /^#(\d+)$/.exec(ref);
  return m ? Number(m[1]) : null;
}
