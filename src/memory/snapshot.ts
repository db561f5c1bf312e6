import MiniSearch from 'minisearch';
import { writeFileAtomic } from '../fs/atomic.ts';
import { INDEX_OPTIONS } from './index-options.ts';
import { PALACE_VERSION, palacePaths, readManifest, readWing, type MemoryDocument } from './palace.ts';
import { makeDir } from '../fs/modes.ts';

/**
 * `palace/index.json`: every wing in one MiniSearch index, serialized, so a searcher
 * starts from one JSON parse instead of indexing every wing again (several times
 * slower). A piscina job; the miner runs it when enough wings moved on.
 */

export interface SnapshotFile {
  version: number;
  /** agent → the wing hash indexed here, and how many docs (their ids are `<agent>#0..n-1`). */
  wings: Record<string, { hash: string; docs: number }>;
  builtAt: string;
  index: unknown;
}

export interface SnapshotResult {
  wings: Record<string, string>;
  docs: number;
  builtAt: string;
  ms: number;
}

/**
 * Builds and writes the snapshot from the wings the manifest lists.
 * @example const r = buildSnapshot('/hive'); // { wings: { alice: 'ab12…' }, docs: 42, ... }
 */
export function buildSnapshot(root: string): SnapshotResult {
  const started = performance.now();
  const manifest = readManifest(root);
  const index = new MiniSearch<MemoryDocument>(INDEX_OPTIONS);
  const wings: SnapshotFile['wings'] = {};
  let docs = 0;
  for (const agent of Object.keys(manifest?.wings ?? {}).sort()) {
    const wing = readWing(root, agent);
    if (!wing) continue;
    index.addAll(wing.docs);
    wings[agent] = { hash: wing.hash, docs: wing.docs.length };
    docs += wing.docs.length;
  }
  const builtAt = new Date().toISOString();
  const file: SnapshotFile = { version: PALACE_VERSION, wings, builtAt, index };
  makeDir(palacePaths(root).dir);
  writeFileAtomic(palacePaths(root).index, JSON.stringify(file), { durable: false });
  return { wings: Object.fromEntries(Object.entries(wings).map(([a, w]) => [a, w.hash])), docs, builtAt, ms: performance.now() - started };
}
