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

/** The largest value written (gzipped); JetStream's default message limit is 1 MiB. */
export const MAX_FENCED_BYTES = 900 * 1024;

export class FencedFiles {
  constructor(
    private readonly kv: KV,
    private readonly onClose: () => Promise<void> = async () => undefined,
  ) {}

  /** Lets go of the connection when it was opened for these files (openFencedFiles). */
  close(): Promise<void> {
    return this.onClose();
  }

  async get(key: string): Promise<FencedValue | null> {
    const e = await this.kv.get(key);
    if (!e || e.operation !== 'PUT' || e.length === 0) return null;
    return { revision: e.revision, data: gunzipSync(e.value) };
  }

  /**
   * Writes `data` if the key is still at `revision` (0: the key does not exist yet) and
   * returns the new revision; E_CONFLICT when someone wrote in between.
   */
  async put(key: string, revision: number, data: Buffer): Promise<number> {
    const packed = gzipSync(data);
    if (packed.length > MAX_FENCED_BYTES) throw new HiveError('E_IO', `${key} is ${packed.length} bytes gzipped, over the ${MAX_FENCED_BYTES} the cluster keeps`, { details: { tooLarge: true } });
    try {
      return revision === 0 ? await this.kv.create(key, packed) : await this.kv.update(key, packed, revision);
    } catch (err) {
      if (/wrong last sequence|key exists/i.test(errorMessage(err))) {
        throw new HiveError('E_CONFLICT', `${key} was written by someone else since revision ${revision}`, { cause: err });
      }
      throw err;
    }
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
        let data: Buffer;
        try {
          data = gunzipSync(e.value);
        } catch {
          continue; // not written by a hive: not a file
        }
        listener(e.key, { revision: e.revision, data });
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
