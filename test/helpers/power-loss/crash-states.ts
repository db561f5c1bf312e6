import fs from 'node:fs';
import path from 'node:path';
import type { Baseline, TraceOp } from './trace.ts';

/**
 * What a power cut after the first `k` operations of a trace can leave on disk (the
 * ALICE / CrashMonkey method, with the conservative POSIX model, not ext4's kinder one):
 *
 * - a file's content is what its last flush (fsync/fdatasync) saw; writes after it may be
 *   there, missing, or torn (a prefix of the new bytes over the old);
 * - a name made or removed in a folder (create, link, rename, unlink) is there for sure
 *   only once that folder was flushed; a rename counts as flushed when either folder was.
 *   Unflushed name changes reach the disk in order (a journal commits them in order), so a
 *   cut keeps a prefix of them.
 *
 * `policy` picks one state among those: `keep` (everything written got there: a process
 * crash), `drop` (nothing unflushed did: the harshest), or `random` (a seeded mix: a
 * prefix of the unflushed name changes, each file's unflushed content kept, dropped or torn).
 */

export type Policy = 'keep' | 'drop' | 'random';

export interface CrashState {
  k: number;
  policy: Policy;
  /** Ids the workload had been told were durable before the cut. */
  acked: Set<string>;
  /** A digest of the state, to skip states already checked. */
  key: string;
  materialize(dir: string): void;
}

type Entry = { ino: number; kind: 'file' | 'dir' };

interface DirOp {
  index: number;
  op: Extract<TraceOp, { op: 'link' } | { op: 'unlink' }>;
  durable: boolean;
}

/** A small deterministic generator (mulberry32) for the `random` policy. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** New bytes up to a random point past what both share, the old bytes after it. */
function torn(durable: Buffer, latest: Buffer, rnd: () => number): Buffer {
  let same = 0;
  while (same < durable.length && same < latest.length && durable[same] === latest[same]) same++;
  const cut = same + Math.floor(rnd() * (Math.max(latest.length, durable.length) - same + 1));
  const head = latest.subarray(0, Math.min(cut, latest.length));
  const tail = durable.length > head.length ? durable.subarray(head.length) : Buffer.alloc(0);
  return Buffer.concat([head, tail]);
}

/** The crash state after `k` ops under `policy` (`rnd` for `random`). */
export function crashState(baseline: Baseline, ops: TraceOp[], k: number, policy: Policy, rnd: () => number = Math.random): CrashState {
  const prefix = ops.slice(0, k);
  const acked = new Set<string>();
  // Files: durable content (last flush) and latest content (last write) per inode.
  const durable = new Map<number, { content: Buffer; mode: number }>();
  const latest = new Map<number, { content: Buffer; mode: number }>();
  for (const [ino, f] of baseline.files) {
    durable.set(ino, f);
    latest.set(ino, f);
  }
  // Name changes per folder, with whether a later flush of the folder made them durable.
  const lastDirSync = new Map<string, number>();
  prefix.forEach((o, i) => {
    if (o.op === 'dirsync') lastDirSync.set(o.dir, i);
  });
  const dirOps: DirOp[] = [];
  prefix.forEach((o, index) => {
    if (o.op === 'ack') for (const id of o.ids) acked.add(id);
    else if (o.op === 'data') latest.set(o.ino, { content: o.content, mode: o.mode });
    else if (o.op === 'sync') durable.set(o.ino, { content: o.content, mode: o.mode });
    else if (o.op === 'link' || o.op === 'unlink') {
      const synced = (d: string) => (lastDirSync.get(d) ?? -1) > index;
      const isDurable = synced(o.dir) || (o.op === 'link' && o.rename !== undefined && synced(o.rename.dir));
      dirOps.push({ index, op: o, durable: isDurable });
    }
  });

  // Which unflushed name changes made it: none, all, or a prefix (in trace order).
  const volatile = dirOps.filter((d) => !d.durable);
  const keepVolatile = policy === 'keep' ? volatile.length : policy === 'drop' ? 0 : Math.floor(rnd() * (volatile.length + 1));
  const kept = new Set(volatile.slice(0, keepVolatile).map((d) => d.index));
  const applied = dirOps.filter((d) => d.durable || kept.has(d.index));

  // Folders: baseline entries, then the applied name changes in order.
  const dirs = new Map<string, Map<string, Entry>>();
  for (const [d, entries] of baseline.dirs) dirs.set(d, new Map(entries));
  const entriesOf = (d: string) => {
    let m = dirs.get(d);
    if (!m) dirs.set(d, (m = new Map()));
    return m;
  };
  for (const { op } of applied) {
    if (op.op === 'unlink') entriesOf(op.dir).delete(op.name);
    else {
      if (op.rename) entriesOf(op.rename.dir).delete(op.rename.name);
      if (op.kind === 'dir') dirs.set(path.join(op.dir, op.name), new Map()); // a new folder starts empty
      entriesOf(op.dir).set(op.name, { ino: op.ino, kind: op.kind });
    }
  }

  // Content of each file inode.
  const content = new Map<number, { content: Buffer; mode: number }>();
  const inodes = new Set([...latest.keys(), ...durable.keys()]);
  for (const ino of inodes) {
    const l = latest.get(ino);
    const d = durable.get(ino) ?? { content: Buffer.alloc(0), mode: l?.mode ?? 0o600 };
    if (!l || l.content.equals(d.content)) content.set(ino, l ?? d);
    else if (policy === 'keep') content.set(ino, l);
    else if (policy === 'drop') content.set(ino, { content: d.content, mode: d.mode });
    else {
      const r = rnd();
      content.set(ino, r < 1 / 3 ? l : r < 2 / 3 ? { content: d.content, mode: d.mode } : { content: torn(d.content, l.content, rnd), mode: l.mode });
    }
  }

  const root = [...baseline.dirs.keys()].sort((a, b) => a.length - b.length)[0]!;
  const parts: string[] = [];
  const visit = (d: string) => {
    const entries = [...(dirs.get(d) ?? new Map<string, Entry>())].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const [name, e] of entries) {
      const p = path.join(d, name);
      if (e.kind === 'dir') {
        parts.push(`D ${path.relative(root, p)}`);
        visit(p);
      } else {
        const c = content.get(e.ino);
        parts.push(`F ${path.relative(root, p)} ${e.ino} ${c?.mode ?? 0} ${c?.content.toString('base64') ?? ''}`);
      }
    }
  };
  visit(root);
  const key = parts.join('\n');

  return {
    k,
    policy,
    acked,
    key,
    materialize(target: string) {
      const made = new Map<number, string>();
      const build = (d: string, out: string) => {
        fs.mkdirSync(out, { recursive: true, mode: 0o700 });
        for (const [name, e] of dirs.get(d) ?? new Map<string, Entry>()) {
          const src = path.join(d, name);
          const dst = path.join(out, name);
          if (e.kind === 'dir') build(src, dst);
          else if (made.has(e.ino)) fs.linkSync(made.get(e.ino)!, dst);
          else {
            const c = content.get(e.ino) ?? { content: Buffer.alloc(0), mode: 0o600 };
            fs.writeFileSync(dst, c.content);
            fs.chmodSync(dst, c.mode);
            made.set(e.ino, dst);
          }
        }
      };
      build(root, target);
    },
  };
}
