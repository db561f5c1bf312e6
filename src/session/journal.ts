import fs from 'node:fs';
import { tempNameFor, writeTempFile } from '../fs/atomic.ts';
import { appendLinesMovingAside } from '../fs/append-lines.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * An append-only JSON-lines journal whose line cap is enforced on write: it never holds
 * more than `cap` lines. An append that would pass the cap first rewrites the file
 * (atomically) with its newest lines, leaving room for a tenth of the cap, so the rewrite
 * happens once per `cap / 10` appends rather than on every one.
 *
 * A torn last line (a crash in the middle of an append) is skipped when read, and the
 * next append starts on a fresh line. Another writer may append to the same file (the
 * hooks socket writes hook events into an agent's transcript): the line count is re-read
 * from disk when the file changed size behind our back, and a trim whose file grew while
 * it was being rewritten starts over. What is left is the instant between that last size
 * check and the rename (microseconds, once per cap/10 appends): a line appended exactly
 * then is lost from the transcript (it is a journal for people; log.jsonl has the event).
 */
export class JsonlJournal<T> {
  private lines: number | null = null;
  /** The file's size after our last write: a different size means another writer appended. */
  private size = -1;

  constructor(
    readonly file: string,
    private readonly cap: number,
  ) {}

  append(records: T[]): void {
    if (records.length === 0) return;
    if (this.lines === null || sizeOf(this.file) !== this.size) this.lines = readJsonl<T>(this.file).length;
    // A batch larger than the whole cap keeps its newest `cap` records.
    const batch = records.length > this.cap ? records.slice(-this.cap) : records;
    const text = batch.map((r) => `${JSON.stringify(r)}\n`).join('');
    if (this.lines + batch.length > this.cap) this.lines = this.trim(Math.max(0, this.cap - batch.length - Math.floor(this.cap / 10)));
    // A symlink or FIFO in the file's place is moved aside, never written through.
    appendLinesMovingAside(this.file, text);
    this.lines += batch.length;
    this.size = sizeOf(this.file);
  }

  read(): T[] {
    return readJsonl<T>(this.file);
  }

  /** Rewrites the file with its newest `keep` lines; returns how many it now holds. */
  private trim(keep: number): number {
    for (let attempt = 0; attempt < 5; attempt++) {
      let bytes: Buffer;
      try {
        bytes = readRegularFile(this.file);
      } catch {
        return 0;
      }
      const lines = parseLines<T>(bytes.toString('utf8'));
      if (lines.length <= keep) return lines.length;
      const kept = keep > 0 ? lines.slice(lines.length - keep) : [];
      const data = kept.map((r) => `${JSON.stringify(r)}\n`).join('');
      // Appended to meanwhile? Read again rather than rename a copy without those lines.
      // (Sizes in bytes as read: a tail torn inside a character decodes to more bytes.)
      const unchanged = () => {
        try {
          return fs.statSync(this.file).size === bytes.length;
        } catch {
          return false;
        }
      };
      const temp = tempNameFor(this.file);
      writeTempFile(temp, data);
      if (!unchanged()) {
        fs.rmSync(temp, { force: true });
        continue;
      }
      fs.renameSync(temp, this.file);
      return kept.length;
    }
    return readJsonl<T>(this.file).length; // a very busy co-writer: trim next time
  }
}

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return -1;
  }
}

function parseLines<T>(text: string): T[] {
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // torn or garbled line: skipped
    }
  }
  return out;
}

/** Parses a JSON-lines file; unparsable lines (a torn tail) are skipped. */
export function readJsonl<T>(file: string): T[] {
  let text: string;
  try {
    text = readRegularFile(file, 'utf8');
  } catch {
    return [];
  }
  return parseLines<T>(text);
}
