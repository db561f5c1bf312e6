import fs from 'node:fs';
import { hiveModes } from './modes.ts';

/**
 * A small JSON record rewritten in place through a file descriptor kept open: one
 * pwrite of a fixed-size, space-padded buffer at offset 0. About 5 µs instead of
 * ~160 µs for open/truncate/write/close on this filesystem. Not fsynced: markers
 * survive a process crash (the page cache does), which is all they are for.
 */
export class MarkerFile {
  private fd: number | null = null;

  constructor(
    readonly file: string,
    private readonly size = 256,
  ) {}

  write(value: unknown): void {
    this.writeText(JSON.stringify(value));
  }

  /** Writes `text` (one line, no newline) padded to the record size. */
  writeText(text: string): void {
    if (text.length >= this.size) throw new Error(`marker ${this.file}: record of ${text.length} bytes exceeds ${this.size}`);
    if (this.fd === null) this.fd = fs.openSync(this.file, fs.existsSync(this.file) ? 'r+' : 'w+', hiveModes().file);
    const buf = Buffer.alloc(this.size, 0x20);
    buf.write(text, 0, 'utf8');
    buf[this.size - 1] = 0x0a;
    fs.writeSync(this.fd, buf, 0, this.size, 0);
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
