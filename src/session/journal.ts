import fs from 'node:fs';
import { writeFileAtomic } from '../fs/atomic.ts';

/**
 * An append-only JSON-lines journal with a line cap enforced on write: past
 * `cap * 1.1` lines it is rewritten atomically with the newest `cap`. A torn last line
 * (a crash in the middle of an append) is skipped when read.
 */
export class JsonlJournal<T> {
  private lines: number | null = null;

  constructor(
    readonly file: string,
    private readonly cap: number,
  ) {}

  append(records: T[]): void {
    if (records.length === 0) return;
    if (this.lines === null) this.lines = readJsonl<T>(this.file).length;
    fs.appendFileSync(this.file, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    this.lines += records.length;
    if (this.lines > this.cap + Math.ceil(this.cap / 10)) {
      const keep = readJsonl<T>(this.file).slice(-this.cap);
      writeFileAtomic(this.file, keep.map((r) => `${JSON.stringify(r)}\n`).join(''), { durable: false });
      this.lines = keep.length;
    }
  }

  read(): T[] {
    return readJsonl<T>(this.file);
  }
}

/** Parses a JSON-lines file; unparsable lines (a torn tail) are skipped. */
export function readJsonl<T>(file: string): T[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
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
