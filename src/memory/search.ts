import { HiveError, describeValue, errorMessage } from '../errors.ts';
import { assertAgentId } from '../protocol/agent-id.ts';
import { appendEvent } from '../log/event-log.ts';
import { palaceIndex, type MemoryMatch } from './search-index.ts';
import { grepMemory } from './grep.ts';
import { mempalaceSearch } from './mempalace.ts';
import fs from 'node:fs';
import { palacePaths, type PalaceManifest } from './palace.ts';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { listDir } from '../fs/atomic.ts';
import { isAgentId } from '../protocol/agent-id.ts';

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
  /**
   * Agents whose memory.md changed since the miner last indexed it: they were searched as
   * plain text beside the index, so an entry added a moment ago is found before it is mined.
   */
  unmined?: string[];
}

/** Agents in scope whose memory.md is not what the index holds (changed, or never mined). */
function unminedAgents(root: string, manifest: PalaceManifest | null, agent: string | undefined): string[] {
  const agents = agent ? [agent] : listDir(hivePaths(root).agents).filter(isAgentId);
  return agents.filter((a) => {
    let st: fs.Stats;
    try {
      st = fs.statSync(agentPaths(root, a).memory);
    } catch {
      return false; // no memory: nothing to find
    }
    const mined = manifest?.wings[a]?.files['memory.md'];
    return !mined || mined[0] !== st.mtimeMs || mined[1] !== st.size;
  });
}

/** Both lists, alternating (their scores are not comparable), without a heading twice. */
function interleave(a: MemoryMatch[], b: MemoryMatch[], limit: number): MemoryMatch[] {
  const out: MemoryMatch[] = [];
  const seen = new Set<string>();
  for (let i = 0; out.length < limit && (i < a.length || i < b.length); i++) {
    for (const m of [a[i], b[i]]) {
      if (!m || out.length >= limit) continue;
      const key = `${m.agent}\0${m.heading}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(m);
    }
  }
  return out;
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
  const unmined = inIndex ? unminedAgents(root, manifest, q.agent) : [];
  if (manifest?.mempalace && options.mempalace !== false && semantic && unmined.length === 0) {
    try {
      return { source: 'mempalace', matches: await mempalaceSearch(manifest.mempalace, palacePaths(root).mempalace, query, q) };
    } catch (err) {
      appendEvent(root, { type: 'memory.mempalace-failed', op: 'search', error: errorMessage(err) });
    }
  }
  if (inIndex && unmined.length === 0) return { source: 'index', matches: palaceIndex(root).search(query, q) };
  if (inIndex) {
    // The index answers for what it holds; what changed since is read as it is now.
    const stale = new Set(unmined);
    const indexed = palaceIndex(root).search(query, { ...q, limit: 100 }).filter((m) => !stale.has(m.agent));
    const fresh = unmined.flatMap((agent) => grepMemory(root, query, { agent, limit: q.limit })).sort((x, y) => y.score - x.score);
    return { source: 'index', matches: interleave(fresh, indexed, q.limit), unmined };
  }
  return { source: 'grep', matches: grepMemory(root, query, q) };
}
