/**
 * A trace of what a workload did to the disk, as a power cut sees it: file contents
 * written (not yet on stable storage), directory entries made or removed (likewise), and
 * the flushes that make either durable. `ack` marks the moment the workload was told a
 * message was safe (its durable write returned): from there on it must survive any cut.
 *
 * Inodes are the real ones (st_ino), so hard links and renames keep their identity.
 */
export type TraceOp =
  /** A file's whole content and mode after a write (not durable until a `sync` of it). */
  | { op: 'data'; ino: number; content: Buffer; mode: number }
  /** A file's content became durable (fsync/fdatasync): `content` as of the flush. */
  | { op: 'sync'; ino: number; content: Buffer; mode: number }
  /** A name in `dir` now points at `ino` (create, link, or the new end of a rename). */
  | { op: 'link'; dir: string; name: string; ino: number; kind: 'file' | 'dir'; rename?: { dir: string; name: string } }
  /** A name in `dir` is gone. */
  | { op: 'unlink'; dir: string; name: string }
  /** `dir`'s entries became durable (fsync of the folder). */
  | { op: 'dirsync'; dir: string }
  /** The workload was told these message ids are durable. */
  | { op: 'ack'; ids: string[] };

/** The disk as it was when the recording started (everything on it taken as durable). */
export interface Baseline {
  /** Folder → its entries (name → inode and kind). */
  dirs: Map<string, Map<string, { ino: number; kind: 'file' | 'dir' }>>;
  /** Inode → content and mode. */
  files: Map<number, { content: Buffer; mode: number }>;
  /** Inode of each folder (a folder's identity for links). */
  dirInodes: Map<string, number>;
}
