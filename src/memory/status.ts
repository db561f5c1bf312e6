import { readManifest } from './palace.ts';

export interface MemoryStatus {
  /** A searchable index exists (something was mined). */
  palaceReady: boolean;
  /** What answers searches: MemPalace, the built-in index, or plain text search. */
  backend: 'mempalace' | 'index' | 'grep';
  /** ISO time of the last mining pass, or null. */
  lastMineTime: string | null;
  indexedAgents: string[];
  /** Searchable sections across all wings. */
  documents: number;
  /** The MemPalace CLI the miner found, or null. */
  mempalace: string | null;
}

/**
 * The palace's state, read from `palace/manifest.json` (no running hive needed).
 * @example memoryStatus('/hive') // { palaceReady: true, backend: 'index', lastMineTime: '…', indexedAgents: ['alice'], documents: 12, mempalace: null }
 */
export function memoryStatus(root: string): MemoryStatus {
  const m = readManifest(root);
  const wings = Object.entries(m?.wings ?? {});
  const semantic = m?.mempalace != null && wings.length > 0 && wings.every(([, w]) => w.mempalace?.hash);
  return {
    palaceReady: wings.length > 0,
    backend: semantic ? 'mempalace' : wings.length > 0 ? 'index' : 'grep',
    lastMineTime: m?.lastMineTime ?? null,
    indexedAgents: wings.map(([a]) => a).sort(),
    documents: wings.reduce((n, [, w]) => n + w.docs, 0),
    mempalace: m?.mempalace?.file ?? null,
  };
}
