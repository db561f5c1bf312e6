import fs from 'node:fs';
import { hivePaths } from '../layout/paths.ts';
import { listRotatedLogs } from './files.ts';
import type { LoggedEvent } from './event-log.ts';
import { openRegular, readRegularFile } from '../fs/regular-file.ts';

/**
 * Reads the event log across rotations, in order, and optionally follows it. The reader
 * keeps the live file open by descriptor: when `log.jsonl` is renamed by a rotation it
 * finishes the old file through that descriptor, then opens the new one from its start,
 * so no line is lost or read twice across a rotation.
 */

/** True when an event concerns agent `id` (as actor, sender, recipient or host member). */
export function eventConcerns(e: Record<string, unknown>, id: string): boolean {
  if (e.agent === id || e.from === id || e.to === id) return true;
  for (const key of ['agents', 'recipients']) {
    const v = e[key];
    if (Array.isArray(v) && v.includes(id)) return true;
  }
  return false;
}

/** Parses one log line; null for a torn or foreign line (reported by the caller if it wants). */
export function parseLogLine(line: string): LoggedEvent | null {
  if (line.trim() === '') return null;
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string' ? (v as LoggedEvent) : null;
  } catch {
    return null;
  }
}

class FileCursor {
  private pos = 0;
  private rest = '';
  constructor(
    readonly fd: number,
    readonly ino: number,
  ) {}

  /** Reads to the current end of file; calls `onLine` for every complete line. */
  drain(onLine: (line: string) => void): void {
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      const n = fs.readSync(this.fd, buf, 0, buf.length, this.pos);
      if (n <= 0) break;
      this.pos += n;
      const text = this.rest + buf.toString('utf8', 0, n);
      const lines = text.split('\n');
      this.rest = lines.pop() ?? '';
      for (const l of lines) onLine(l);
    }
  }

  /** A last line without a newline (only when the file is finished, i.e. rotated away). */
  flush(onLine: (line: string) => void): void {
    if (this.rest !== '') onLine(this.rest);
    this.rest = '';
  }

  close(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

function openLive(root: string): FileCursor | null {
  try {
    // A symlink or FIFO in the log's place is never read through or waited on.
    const { fd, stats } = openRegular(hivePaths(root).log);
    return new FileCursor(fd, stats.ino);
  } catch {
    return null;
  }
}

function inoOf(file: string): number | null {
  try {
    return fs.statSync(file).ino;
  } catch {
    return null;
  }
}

function readWhole(file: string, onLine: (line: string) => void): void {
  let text: string;
  try {
    text = readRegularFile(file, 'utf8');
  } catch {
    return; // pruned meanwhile
  }
  for (const l of text.split('\n')) if (l !== '') onLine(l);
}

export interface LogReader {
  /** Reads what is new (across a rotation if one happened). */
  poll(): void;
  close(): void;
}

/**
 * Reads every line of the log (rotated files, then the live one) and returns a reader
 * that `poll()`s for more.
 * @example const r = openLogReader(root, (l) => console.log(l)); r.close();
 */
export function openLogReader(root: string, onLine: (line: string) => void): LogReader {
  let live = openLive(root);
  // Rotated files first, skipping the one our descriptor is (a rotation right after we opened it).
  for (const r of listRotatedLogs(root)) if (live === null || inoOf(r.file) !== live.ino) readWhole(r.file, onLine);
  live?.drain(onLine);
  return {
    poll() {
      for (let i = 0; i < 4; i++) {
        live?.drain(onLine);
        const now = inoOf(hivePaths(root).log);
        if (now === null || now === live?.ino) return;
        // Rotated: finish the old file through the descriptor, then switch to the new one.
        live?.flush(onLine);
        live?.close();
        live = openLive(root);
      }
    },
    close() {
      live?.close();
      live = null;
    },
  };
}

/**
 * All events, oldest first, optionally only those concerning one agent.
 * @example readLog(root, { agent: 'writer' })
 */
export function readLog(root: string, filter: { agent?: string } = {}): LoggedEvent[] {
  const out: LoggedEvent[] = [];
  const reader = openLogReader(root, (line) => {
    const e = parseLogLine(line);
    if (e && (!filter.agent || eventConcerns(e, filter.agent))) out.push(e);
  });
  reader.close();
  return out;
}
