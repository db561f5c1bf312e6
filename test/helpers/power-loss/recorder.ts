import fs from 'node:fs';
import path from 'node:path';
import type { Baseline, TraceOp } from './trace.ts';

/**
 * Records what code in this thread does to the files under `root`, by wrapping the
 * node:fs functions Hive writes with (every Hive module calls them as `fs.x`, so a wrap
 * of the shared module object sees them all). Reads are not recorded. Only this thread:
 * the workload must run in-process (no worker threads), which the power-loss test does.
 *
 * Each content change is recorded as the file's whole content after it (read back through
 * /proc/self/fd), so the crash model never re-implements write offsets or O_APPEND.
 */

type AnyFn = (...args: never[]) => unknown;
const real = {
  openSync: fs.openSync,
  closeSync: fs.closeSync,
  writeSync: fs.writeSync,
  writeFileSync: fs.writeFileSync,
  appendFileSync: fs.appendFileSync,
  ftruncateSync: fs.ftruncateSync,
  truncateSync: fs.truncateSync,
  fchmodSync: fs.fchmodSync,
  chmodSync: fs.chmodSync,
  renameSync: fs.renameSync,
  linkSync: fs.linkSync,
  unlinkSync: fs.unlinkSync,
  rmSync: fs.rmSync,
  rmdirSync: fs.rmdirSync,
  mkdirSync: fs.mkdirSync,
  copyFileSync: fs.copyFileSync,
  fsyncSync: fs.fsyncSync,
  fdatasyncSync: fs.fdatasyncSync,
  fsync: fs.fsync,
  fdatasync: fs.fdatasync,
  symlinkSync: fs.symlinkSync,
};

function lstat(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch {
    return null;
  }
}

/** Everything under `root`, as durable. */
export function snapshotTree(root: string): Baseline {
  const base: Baseline = { dirs: new Map(), files: new Map(), dirInodes: new Map() };
  const walk = (dir: string) => {
    const entries = new Map<string, { ino: number; kind: 'file' | 'dir' }>();
    base.dirs.set(dir, entries);
    base.dirInodes.set(dir, fs.statSync(dir).ino);
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name);
      const st = fs.lstatSync(p);
      if (st.isDirectory()) {
        entries.set(name, { ino: st.ino, kind: 'dir' });
        walk(p);
      } else if (st.isFile()) {
        entries.set(name, { ino: st.ino, kind: 'file' });
        if (!base.files.has(st.ino)) base.files.set(st.ino, { content: fs.readFileSync(p), mode: st.mode & 0o7777 });
      }
    }
  };
  walk(root);
  return base;
}

export class DiskRecorder {
  readonly ops: TraceOp[] = [];
  private readonly fds = new Map<number, string>();
  /**
   * Inode numbers already used by some file of the baseline or the trace. The kernel gives a
   * freed number to the next file it makes (registry.json replaced, then an inbox segment
   * made, can share one), and the crash model knows a file by its number: a number made
   * again gets an identity of its own (a negative one), or the new file would be taken for
   * the old one (a test failed now and then, right after a run that freed many inodes).
   */
  private readonly used = new Set<number>();
  private readonly renumbered = new Map<number, number>();
  private nextIdentity = -1;

  /** The crash model's identity of the file with inode number `ino` now. */
  private idOf(ino: number): number {
    return this.renumbered.get(ino) ?? ino;
  }

  /** A file or folder was just made with inode number `ino`: its identity. */
  private made(ino: number): number {
    if (this.used.has(ino)) this.renumbered.set(ino, this.nextIdentity--);
    else this.renumbered.delete(ino);
    this.used.add(ino);
    return this.idOf(ino);
  }
  private readonly prefix: string;
  private active = false;

  constructor(readonly root: string) {
    this.root = path.resolve(root);
    this.prefix = `${this.root}${path.sep}`;
  }

  /** Wraps node:fs; returns the baseline (the tree as it is now, taken as durable). */
  start(): Baseline {
    const baseline = snapshotTree(this.root);
    for (const ino of baseline.files.keys()) this.used.add(ino);
    for (const ino of baseline.dirInodes.values()) this.used.add(ino);
    for (const entries of baseline.dirs.values()) for (const e of entries.values()) this.used.add(e.ino);
    this.active = true;
    this.install();
    return baseline;
  }

  stop(): void {
    this.active = false;
    Object.assign(fs, real);
  }

  /** The workload was told these ids are durable. */
  ack(ids: string[]): void {
    if (this.active) this.ops.push({ op: 'ack', ids });
  }

  private inside(p: string): boolean {
    return p === this.root || p.startsWith(this.prefix);
  }

  private contentOf(fd: number): { ino: number; content: Buffer; mode: number } {
    const st = fs.fstatSync(fd);
    return { ino: this.idOf(st.ino), content: fs.readFileSync(`/proc/self/fd/${fd}`), mode: st.mode & 0o7777 };
  }

  private dataByFd(fd: number): void {
    const p = this.fds.get(fd);
    if (!p || !this.active) return;
    const c = this.contentOf(fd);
    this.ops.push({ op: 'data', ...c });
  }

  private dataByPath(p: string): void {
    const st = lstat(p);
    if (!st?.isFile()) return;
    this.ops.push({ op: 'data', ino: this.idOf(st.ino), content: fs.readFileSync(p), mode: st.mode & 0o7777 });
  }

  private created(p: string, existed: boolean): void {
    if (existed) return;
    const st = lstat(p);
    if (!st) return;
    this.ops.push({ op: 'link', dir: path.dirname(p), name: path.basename(p), ino: this.made(st.ino), kind: st.isDirectory() ? 'dir' : 'file' });
  }

  private syncFd(fd: number, content?: { ino: number; content: Buffer; mode: number }): void {
    const p = this.fds.get(fd);
    if (!p || !this.active) return;
    const st = fs.fstatSync(fd);
    if (st.isDirectory()) this.ops.push({ op: 'dirsync', dir: p });
    else this.ops.push({ op: 'sync', ...(content ?? this.contentOf(fd)) });
  }

  private install(): void {
    const self = this;
    const abs = (p: unknown) => (typeof p === 'string' ? path.resolve(p) : p instanceof URL ? path.resolve(p.pathname) : null);
    const wrap = <K extends keyof typeof real>(name: K, fn: (...args: Parameters<(typeof real)[K]>) => unknown) => {
      (fs as unknown as Record<string, AnyFn>)[name] = fn as unknown as AnyFn;
    };

    wrap('openSync', (p, flags, mode) => {
      const file = abs(p);
      const existed = file ? lstat(file) !== null : true;
      const fd = real.openSync(p, flags, mode);
      if (file && self.inside(file)) {
        self.fds.set(fd, file);
        if (self.active) {
          self.created(file, existed);
          const f = typeof flags === 'string' ? flags : '';
          if (!existed || f.startsWith('w') || (typeof flags === 'number' && (flags & fs.constants.O_TRUNC) !== 0)) {
            if (fs.fstatSync(fd).isFile()) self.dataByFd(fd);
          }
        }
      }
      return fd;
    });
    wrap('closeSync', (fd) => {
      self.fds.delete(fd);
      return real.closeSync(fd);
    });
    wrap('writeSync', ((fd: number, ...rest: unknown[]) => {
      const n = (real.writeSync as unknown as AnyFn)(fd as never, ...(rest as never[]));
      self.dataByFd(fd);
      return n;
    }) as never);
    for (const name of ['writeFileSync', 'appendFileSync'] as const) {
      wrap(name, ((target: unknown, ...rest: unknown[]) => {
        const file = typeof target === 'number' ? null : abs(target);
        const existed = file ? lstat(file) !== null : true;
        const r = (real[name] as unknown as AnyFn)(target as never, ...(rest as never[]));
        if (typeof target === 'number') self.dataByFd(target);
        else if (file && self.inside(file) && self.active) {
          self.created(file, existed);
          self.dataByPath(file);
        }
        return r;
      }) as never);
    }
    wrap('ftruncateSync', (fd, len) => {
      const r = real.ftruncateSync(fd, len);
      self.dataByFd(fd);
      return r;
    });
    wrap('truncateSync', (p, len) => {
      const r = real.truncateSync(p, len);
      const file = abs(p);
      if (file && self.inside(file) && self.active) self.dataByPath(file);
      return r;
    });
    wrap('fchmodSync', (fd, mode) => {
      const r = real.fchmodSync(fd, mode);
      self.dataByFd(fd);
      return r;
    });
    wrap('chmodSync', (p, mode) => {
      const r = real.chmodSync(p, mode);
      const file = abs(p);
      if (file && self.inside(file) && self.active) self.dataByPath(file);
      return r;
    });
    wrap('renameSync', (from, to) => {
      const a = abs(from)!;
      const b = abs(to)!;
      const st = lstat(a);
      const r = real.renameSync(from, to);
      if (self.active && st && (self.inside(a) || self.inside(b))) {
        if (st.isDirectory()) throw new Error(`power-loss recorder: a folder was renamed (${a} → ${b}); the crash model handles files only`);
        self.ops.push({ op: 'link', dir: path.dirname(b), name: path.basename(b), ino: self.idOf(st.ino), kind: 'file', rename: { dir: path.dirname(a), name: path.basename(a) } });
      }
      return r;
    });
    wrap('linkSync', (existing, next) => {
      const r = real.linkSync(existing, next);
      const b = abs(next)!;
      if (self.active && self.inside(b)) {
        const st = fs.lstatSync(b);
        self.ops.push({ op: 'link', dir: path.dirname(b), name: path.basename(b), ino: self.idOf(st.ino), kind: 'file' });
      }
      return r;
    });
    const removed = (p: unknown, rm: () => unknown) => {
      const file = abs(p);
      const existed = file ? lstat(file) !== null : false;
      const r = rm();
      if (self.active && file && existed && self.inside(file) && lstat(file) === null) self.ops.push({ op: 'unlink', dir: path.dirname(file), name: path.basename(file) });
      return r;
    };
    wrap('unlinkSync', (p) => removed(p, () => real.unlinkSync(p)));
    wrap('rmdirSync', (p, o) => removed(p, () => real.rmdirSync(p, o)));
    wrap('rmSync', (p, o) => removed(p, () => real.rmSync(p, o)));
    wrap('mkdirSync', (p, o) => {
      const dir = abs(p)!;
      const missing: string[] = [];
      for (let d = dir; !lstat(d); d = path.dirname(d)) missing.unshift(d);
      const r = real.mkdirSync(p, o);
      if (self.active) for (const d of missing) if (self.inside(d)) self.created(d, false);
      return r;
    });
    wrap('copyFileSync', (src, dest, mode) => {
      const b = abs(dest)!;
      const existed = lstat(b) !== null;
      const r = real.copyFileSync(src, dest, mode);
      if (self.active && self.inside(b)) {
        self.created(b, existed);
        self.dataByPath(b);
      }
      return r;
    });
    wrap('symlinkSync', (target, p, type) => {
      const file = abs(p);
      if (self.active && file && self.inside(file)) throw new Error(`power-loss recorder: a symlink was made at ${file}; not modelled`);
      return real.symlinkSync(target, p, type);
    });
    wrap('fsyncSync', (fd) => {
      const r = real.fsyncSync(fd);
      self.syncFd(fd);
      return r;
    });
    wrap('fdatasyncSync', (fd) => {
      const r = real.fdatasyncSync(fd);
      self.syncFd(fd);
      return r;
    });
    for (const name of ['fsync', 'fdatasync'] as const) {
      wrap(name, ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        // The flush covers what was written when it was issued; it counts once it is done.
        const p = self.fds.get(fd);
        const isFile = p !== undefined && fs.fstatSync(fd).isFile();
        const content = isFile && self.active ? self.contentOf(fd) : undefined;
        (real[name] as unknown as AnyFn)(fd as never, ((err: NodeJS.ErrnoException | null) => {
          if (!err && p !== undefined && self.active) {
            if (isFile) self.ops.push({ op: 'sync', ...content! });
            else self.ops.push({ op: 'dirsync', dir: p });
          }
          cb(err);
        }) as never);
      }) as never);
    }
  }
}
