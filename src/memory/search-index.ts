import fs from 'node:fs';
import path from 'node:path';
import MiniSearch from 'minisearch';
import { INDEX_OPTIONS, SEARCH_OPTIONS } from './index-options.ts';
import { topK } from './top-k.ts';
import { excerptOf } from './excerpt.ts';
import { PALACE_VERSION, palacePaths, readManifest, readWing, type MemoryDocument, type PalaceManifest } from './palace.ts';
import type { SnapshotFile } from './snapshot.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/** One search hit, whatever answered it. */
export interface MemoryMatch {
  agent: string;
  heading: string;
  excerpt: string;
  score: number;
}

export interface IndexQuery {
  agent?: string;
  limit: number;
}

function stampOf(file: string): string | null {
  try {
    const st = fs.statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

/**
 * The built-in index as a searcher sees it: the snapshot plus every wing that moved on
 * since, kept in memory and refreshed when `palace/manifest.json` changes (one stat per
 * query). Reads only files, so it works in any thread or process (an agent worker's
 * `get_memory` needs no round trip to the main thread).
 */
export class PalaceIndex {
  private index: MiniSearch<MemoryDocument> | null = null;
  private readonly loaded = new Map<string, { hash: string; docs: number }>();
  private manifestStamp: string | null = null;
  private snapshotStamp: string | null = null;
  private manifest: PalaceManifest | null = null;
  private wingsStale = true;

  constructor(readonly root: string) {}

  /** True when something was mined (the manifest exists). */
  ready(): boolean {
    const m = this.currentManifest();
    return m !== null && Object.keys(m.wings).length > 0;
  }

  /** The manifest, re-read only when the file changed (one stat). Does not load the index. */
  currentManifest(): PalaceManifest | null {
    const stamp = stampOf(palacePaths(this.root).manifest);
    if (stamp !== this.manifestStamp) {
      this.manifestStamp = stamp;
      this.manifest = readManifest(this.root);
      this.wingsStale = true;
    }
    return this.manifest;
  }

  /**
   * Brings the in-memory index up to date with the palace: the snapshot when it changed,
   * then the wings that moved on since (cheap when nothing changed: two stats).
   */
  refresh(): void {
    this.currentManifest();
    const file = palacePaths(this.root).index;
    const snapStamp = stampOf(file);
    if (!this.index || snapStamp !== this.snapshotStamp) {
      this.snapshotStamp = snapStamp;
      this.loadSnapshot(file);
      this.wingsStale = true;
    }
    if (this.wingsStale) {
      this.wingsStale = false;
      this.applyWings();
    }
  }

  private loadSnapshot(file: string): void {
    this.loaded.clear();
    this.index = null;
    try {
      const snap = JSON.parse(readRegularFile(file, 'utf8')) as SnapshotFile;
      if (snap.version === PALACE_VERSION) {
        this.index = MiniSearch.loadJS<MemoryDocument>(snap.index as never, INDEX_OPTIONS);
        for (const [agent, w] of Object.entries(snap.wings)) this.loaded.set(agent, w);
      }
    } catch {
      // no snapshot (or a damaged one): start empty and add every wing
    }
    this.index ??= new MiniSearch<MemoryDocument>(INDEX_OPTIONS);
  }

  /** Re-adds wings whose hash differs from what is loaded; drops wings that are gone. */
  private applyWings(): void {
    const index = this.index!;
    const wings = this.manifest?.wings ?? {};
    for (const [agent, have] of [...this.loaded]) {
      if (wings[agent]) continue;
      this.discardWing(index, agent, have.docs);
      this.loaded.delete(agent);
    }
    for (const [agent, record] of Object.entries(wings)) {
      const have = this.loaded.get(agent);
      if (have?.hash === record.hash) continue;
      const wing = readWing(this.root, agent);
      if (!wing || wing.hash === have?.hash) continue;
      if (have) this.discardWing(index, agent, have.docs);
      index.addAll(wing.docs);
      this.loaded.set(agent, { hash: wing.hash, docs: wing.docs.length });
    }
  }

  private discardWing(index: MiniSearch<MemoryDocument>, agent: string, docs: number): void {
    for (let i = 0; i < docs; i++) {
      const id = `${agent}#${i}`;
      if (index.has(id)) index.discard(id);
    }
  }

  /**
   * Ranked matches (BM25 over headings and text, headings boosted), MiniSearch's ranking
   * computed top-k (see `top-k.ts`).
   * @example new PalaceIndex('/hive').search('rollback', { limit: 5 })
   */
  search(query: string, q: IndexQuery): MemoryMatch[] {
    this.refresh();
    const agent = q.agent;
    const hits = topK(this.index!, query, q.limit, SEARCH_OPTIONS, agent ? (f) => f.agent === agent : undefined);
    return hits.map((h) => ({
      agent: h.fields.agent as string,
      heading: h.fields.heading as string,
      excerpt: excerptOf(h.fields.text as string, query),
      score: Math.round(h.score * 1000) / 1000,
    }));
  }
}

const cache = new Map<string, PalaceIndex>();

/** The process-wide searcher of a hive root (one per thread). */
export function palaceIndex(root: string): PalaceIndex {
  const key = path.resolve(root);
  let index = cache.get(key);
  if (!index) {
    index = new PalaceIndex(key);
    cache.set(key, index);
  }
  return index;
}
