import { HiveError, describeValue, errorMessage } from '../errors.ts';
import { assertAgentId } from '../protocol/agent-id.ts';
import { appendEvent } from '../log/event-log.ts';
import { palaceIndex, type MemoryMatch } from './search-index.ts';
import { grepMemory } from './grep.ts';
import { mempalaceSearch } from './mempalace.ts';
import { palacePaths } from './palace.ts';

export type { MemoryMatch };

export interface MemorySearchOptions {
  /** Only this agent's memory (its wing). Default: every agent. */
  agent?: string;
  /** At most this many matches (default 5, at most 100). */
  limit?: number;
  /** false: skip MemPalace even where it is installed. */
  mempalace?: boolean;
}

export interface MemorySearchResult {
  /** What answered: MemPalace (semantic), the built-in index, or plain text search. */
  source: 'mempalace' | 'index' | 'grep';
  matches: MemoryMatch[];
}

function checkQuery(query: unknown, limit: unknown): void {
  if (typeof query !== 'string' || !query.trim()) {
    throw new HiveError('E_BAD_ARGS', `Expected a memory search query with some text, got ${describeValue(query)}`);
  }
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 100)) {
    throw new HiveError('E_BAD_ARGS', `Expected the search limit to be an integer from 1 to 100, got ${describeValue(limit)}`);
  }
}

/**
 * get_memory: searches the hive's memories. MemPalace answers where the miner used it
 * (its failure or timeout falls through), then the built-in index, then plain text
 * search when nothing was mined (or the agent asked about is not in the index yet).
 * Reads files only: callable from any thread or process, with or without a running hive.
 * @example const { source, matches } = await searchMemory('/hive', 'rollback procedure', { limit: 3 });
 */
export async function searchMemory(root: string, query: string, options: MemorySearchOptions = {}): Promise<MemorySearchResult> {
  checkQuery(query, options.limit);
  if (options.agent !== undefined) assertAgentId(options.agent, 'the agent to search');
  const q = { limit: options.limit ?? 5, ...(options.agent !== undefined ? { agent: options.agent } : {}) };
  const manifest = palaceIndex(root).currentManifest();
  const wings = manifest?.wings ?? {};
  const inIndex = q.agent ? wings[q.agent] !== undefined : Object.keys(wings).length > 0;
  // MemPalace answers only when it has mined every wing in scope (else it would miss some).
  const scope = Object.entries(wings).filter(([a]) => !q.agent || a === q.agent);
  const semantic = scope.length > 0 && scope.every(([, w]) => w.mempalace?.hash);
  if (manifest?.mempalace && options.mempalace !== false && semantic) {
    try {
      return { source: 'mempalace', matches: await mempalaceSearch(manifest.mempalace, palacePaths(root).mempalace, query, q) };
    } catch (err) {
      appendEvent(root, { type: 'memory.mempalace-failed', op: 'search', error: errorMessage(err) });
    }
  }
  if (inIndex) return { source: 'index', matches: palaceIndex(root).search(query, q) };
  return { source: 'grep', matches: grepMemory(root, query, q) };
}
