import { createHash, randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { connect } from './nats.ts';
import { Kvm, type KV } from '@nats-io/kv';
import { HiveError, errorMessage } from '../errors.ts';

/**
 * Files of the hive kept in the cluster (docs/architecture.md, "Cluster mode"): KV
 * `<prefix>_files`, one key per file (`conversation.<agent>`, `memory.<agent>`), values
 * gzipped. Every write names the revision it read (compare-and-set), so a stale owner that
 * comes back cannot overwrite what the new one wrote: E_CONFLICT. Reads ask the stream's
 * leader (the bucket has no direct gets), never a follower that is behind.
 */
export interface FencedValue {
  /** The key's revision (what the next write must name). */
  revision: number;
  data: Buffer;
}

/**
 * The largest value kept in its key (gzipped); JetStream's default message limit is 1 MiB.
 * A larger one goes to chunk keys of its own (`blob.<key>.<id>.<n>`, each at most
 * BLOB_CHUNK_BYTES, written once and never updated), and the key holds a pointer to them
 * (JSON, where a value of its own is gzip: told apart by gzip's first two bytes). The
 * pointer's write is the fenced one (compare-and-set), so a stale owner's chunks are never
 * pointed at (and are removed again); the chunks a pointer stops naming are removed after.
 */
export const MAX_FENCED_BYTES = 900 * 1024;
const BLOB_CHUNK_BYTES = 768 * 1024;
/** The largest value the cluster keeps at all (gzipped). */
export const MAX_BLOB_BYTES = 256 * 1024 * 1024;

/** Where a large value's chunks are. */
interface BlobPointer {
  blob: string;
  chunks: number;
  bytes: number;
  sha256: string;
}

const isGzip = (v: Uint8Array) => v.length >= 2 && v[0] === 0x1f && v[1] === 0x8b;

function pointerOf(value: Uint8Array): BlobPointer | null {
  if (isGzip(value)) return null;
  try {
    const p = JSON.parse(Buffer.from(value).toString('utf8')) as Partial<BlobPointer>;
    if (typeof p.blob === 'string' && Number.isInteger(p.chunks) && Number.isInteger(p.bytes) && typeof p.sha256 === 'string') return p as BlobPointer;
  } catch {
    // neither gzip nor a pointer: below
  }
  return null;
}

const chunkKey = (blob: string, i: number) => `${blob}.${i}`;

export class FencedFiles {
  /** The blob each key pointed at when this instance last read or wrote it (removed once the key moves on). */
  private readonly blobs = new Map<string, BlobPointer>();

  /** The largest value this writes (gzipped): larger is `E_IO` with `details.tooLarge`. */
  maxBytes = MAX_BLOB_BYTES;

  constructor(
    private readonly kv: KV,
    private readonly onClose: () => Promise<void> = async () => undefined,
  ) {}

  /** Lets go of the connection when it was opened for these files (openFencedFiles). */
  close(): Promise<void> {
    return this.onClose();
  }

  async get(key: string): Promise<FencedValue | null> {
    for (let attempt = 0; ; attempt++) {
      const e = await this.kv.get(key);
      if (!e || e.operation !== 'PUT' || e.length === 0) return null;
      const pointer = pointerOf(e.value);
      if (!pointer) return { revision: e.revision, data: gunzipSync(e.value) };
      const data = await this.readBlob(pointer);
      // Null: its chunks went (the key moved on since it was read): read the key again.
      if (data) {
        this.blobs.set(key, pointer);
        return { revision: e.revision, data };
      }
      if (attempt >= 5) throw new HiveError('E_IO', `${key} points at chunks that are gone or damaged (${pointer.blob})`);
    }
  }

  /** A large value's bytes (gunzipped), or null when a chunk is missing or the whole does not match its digest. */
  private async readBlob(p: BlobPointer): Promise<Buffer | null> {
    const parts = await Promise.all(Array.from({ length: p.chunks }, (_, i) => this.kv.get(chunkKey(p.blob, i))));
    if (parts.some((c) => !c || c.operation !== 'PUT')) return null;
    const packed = Buffer.concat(parts.map((c) => c!.value));
    if (packed.length !== p.bytes || createHash('sha256').update(packed).digest('hex') !== p.sha256) return null;
    return gunzipSync(packed);
  }

  /** Writes `packed` as chunks under a name of its own; the pointer (as the key's value) to them. */
  private async writeBlob(key: string, packed: Buffer): Promise<{ pointer: BlobPointer; value: Buffer }> {
    const pointer: BlobPointer = {
      blob: `blob.${key}.${randomUUID().replace(/-/g, '').slice(0, 16)}`,
      chunks: Math.ceil(packed.length / BLOB_CHUNK_BYTES),
      bytes: packed.length,
      sha256: createHash('sha256').update(packed).digest('hex'),
    };
    for (let i = 0; i < pointer.chunks; i++) await this.kv.create(chunkKey(pointer.blob, i), packed.subarray(i * BLOB_CHUNK_BYTES, (i + 1) * BLOB_CHUNK_BYTES));
    return { pointer, value: Buffer.from(JSON.stringify(pointer)) };
  }

  /** Best effort: a blob no key points at any more (a reader that still had its pointer reads the key again). */
  private async dropBlob(p: BlobPointer): Promise<void> {
    await Promise.all(Array.from({ length: p.chunks }, (_, i) => this.kv.purge(chunkKey(p.blob, i)).catch(() => undefined)));
  }

  /**
   * Writes `data` if the key is still at `revision` (0: the key does not exist yet) and
   * returns the new revision; E_CONFLICT when someone wrote in between.
   */
  async put(key: string, revision: number, data: Buffer): Promise<number> {
    const packed = gzipSync(data);
    if (packed.length > this.maxBytes) throw new HiveError('E_IO', `${key} is ${packed.length} bytes gzipped, over the ${this.maxBytes} the cluster keeps`, { details: { tooLarge: true } });
    const blob = packed.length > MAX_FENCED_BYTES ? await this.writeBlob(key, packed) : null;
    const value = blob?.value ?? packed;
    let written: number;
    try {
      written = revision === 0 ? await this.kv.create(key, value) : await this.kv.update(key, value, revision);
    } catch (err) {
      if (/wrong last sequence|key exists/i.test(errorMessage(err))) {
        if (blob) await this.dropBlob(blob.pointer); // refused: never pointed at
        throw new HiveError('E_CONFLICT', `${key} was written by someone else since revision ${revision}`, { cause: err });
      }
      // Any other failure may have written the pointer and lost only its answer (a caller
      // then finds its own write there): its chunks stay.
      throw err;
    }
    const before = this.blobs.get(key);
    if (blob) this.blobs.set(key, blob.pointer);
    else this.blobs.delete(key);
    if (before && before.blob !== blob?.pointer.blob) await this.dropBlob(before);
    return written;
  }

  /**
   * Read, change, write, again while someone else wrote in between. `change` answers the
   * new contents or null (nothing to write); `done` tells a write whose answer was lost
   * (it is there when read again) from one still to make.
   */
  async update(key: string, change: (current: Buffer | null) => Buffer | null, done?: (current: Buffer) => boolean): Promise<FencedValue | null> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.get(key);
      if (attempt > 0 && current && done?.(current.data)) return current;
      const next = change(current?.data ?? null);
      if (next === null) return current;
      try {
        return { revision: await this.put(key, current?.revision ?? 0, next), data: next };
      } catch (err) {
        if ((err as HiveError).code !== 'E_CONFLICT' || attempt >= 50) throw err;
      }
    }
  }

  /**
   * Calls `listener` with each key under `prefix` as it is written (and once for each now);
   * `onEnd` when the watch ends other than by the returned stop.
   */
  async watch(prefix: string, listener: (key: string, value: FencedValue) => void, onEnd?: (err: unknown) => void): Promise<() => void> {
    const it = await this.kv.watch({ key: `${prefix}>`, ignoreDeletes: true });
    let stopped = false;
    void (async () => {
      for await (const e of it) {
        if (e.operation !== 'PUT' || e.length === 0) continue;
        let data: Buffer | null;
        try {
          const pointer = pointerOf(e.value);
          // A blob whose chunks went: the key moved on, and its newer value comes next.
          data = pointer ? await this.readBlob(pointer) : gunzipSync(e.value);
        } catch {
          continue; // not written by a hive: not a file
        }
        if (data) listener(e.key, { revision: e.revision, data });
      }
      if (!stopped) onEnd?.(new Error(`the watch of ${prefix}> ended`));
    })().catch((err: unknown) => !stopped && onEnd?.(err));
    return () => {
      stopped = true;
      it.stop();
    };
  }
}

/**
 * The hive's files bucket on its own connection (for a tool or a memory write outside the
 * transport); its router made the bucket. Close it when done.
 */
export async function openFencedFiles(servers: string[], prefix: string): Promise<FencedFiles> {
  let nc;
  try {
    nc = await connect({ servers, name: `hive-${prefix}-files`, timeout: 5_000 });
  } catch (err) {
    throw new HiveError('E_UNAVAILABLE', `Cannot connect to NATS at ${servers.join(', ')}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    const kv = await new Kvm(nc).open(`${prefix}_files`);
    return new FencedFiles(kv, () => nc.close());
  } catch (err) {
    await nc.close();
    throw err;
  }
}
