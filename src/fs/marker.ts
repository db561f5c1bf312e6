import fs from 'node:fs';
import { hiveModes } from './modes.ts';
import { openFiles, type Reopenable } from './open-files.ts';
import { readRegularFile } from './regular-file.ts';

/**
 * A small JSON record rewritten in place through a file descriptor kept open: one
 * pwrite of a fixed-size, space-padded buffer at offset 0: one system call instead of
 * four (open, truncate, write, close), and no file creation. Not fsynced: markers
 * survive a process crash (the page cache does), which is all they are for. The
 * descriptor counts against the thread's open files (src/fs/open-files.ts): a marker
 * unused for long is closed and opened again at its next write.
 */
export class MarkerFile implements Reopenable {
  private fd: number | null = null;

  constructor(
    readonly file: string,
    private readonly size = 256,
  ) {}

  write(value: unknown): void {
    this.writeText(JSON.stringify(value));
  }

  /**
   * `write`, then checks that the marker's name still leads to the file written (someone
   * may have removed it or put something else there); if not, makes it anew and writes
   * again. One lstat more: for markers readers depend on.
   */
  writeFollowing(value: unknown): void {
    this.write(value);
    if (this.stillThere()) return;
    this.close();
    this.write(value);
  }

  private stillThere(): boolean {
    try {
      const named = fs.lstatSync(this.file);
      const open = fs.fstatSync(this.fd!);
      return named.ino === open.ino && named.dev === open.dev;
    } catch {
      return false;
    }
  }

  /** Writes `text` (one line, no newline) padded to the record size. */
  writeText(text: string): void {
    if (text.length >= this.size) throw new Error(`marker ${this.file}: record of ${text.length} bytes exceeds ${this.size}`);
    if (this.fd === null) this.fd = this.open();
    openFiles.used(this);
    const buf = Buffer.alloc(this.size, 0x20);
    buf.write(text, 0, 'utf8');
    buf[this.size - 1] = 0x0a;
    fs.writeSync(this.fd, buf, 0, this.size, 0);
  }

  /**
   * Opens the marker, never through a symlink or into a FIFO someone put in its place
   * (O_NOFOLLOW | O_NONBLOCK, checked with fstat): such a thing is removed and the marker
   * made anew (a marker holds nothing that is not also elsewhere).
   */
  private open(): number {
    const flags = fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
    let fd: number;
    try {
      fd = fs.openSync(this.file, flags, hiveModes().file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOOP' && (err as NodeJS.ErrnoException).code !== 'ENXIO') throw err;
      fs.rmSync(this.file, { force: true });
      return fs.openSync(this.file, flags, hiveModes().file);
    }
    if (fs.fstatSync(fd).isFile()) return fd;
    fs.closeSync(fd);
    fs.rmSync(this.file, { recursive: true, force: true });
    return fs.openSync(this.file, flags, hiveModes().file);
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    openFiles.closed(this);
  }

  closeIdle(): boolean {
    this.close();
    return true;
  }
}

/** What a marker holds, or null when it is missing or unreadable (a regular file only). */
export function readMarker(file: string): unknown {
  try {
    return JSON.parse(readRegularFile(file, 'utf8')) as unknown;
  } catch {
    return null;
  }
}
