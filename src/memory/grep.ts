import { agentPaths, hivePaths } from '../layout/paths.ts';
import { listDir } from '../fs/atomic.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { documentsOf } from './mine-wing.ts';
import { excerptOf } from './excerpt.ts';
import { processTerm, words } from './terms.ts';
import type { IndexQuery, MemoryMatch } from './search-index.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * The fallback when nothing was mined yet: plain text search over every memory.md.
 * Each section scores by how many of the query's words it contains (case-insensitive
 * substrings), then by how often: no ranking model, but never an empty answer when the
 * words are there.
 */
export function grepMemory(root: string, query: string, q: IndexQuery): MemoryMatch[] {
  const wanted = [...new Set(words(query).filter((w) => processTerm(w) !== null))];
  if (wanted.length === 0) return [];
  const agents = q.agent ? [q.agent] : listDir(hivePaths(root).agents).filter(isAgentId).sort();
  const matches: MemoryMatch[] = [];
  for (const agent of agents) {
    let text: string;
    try {
      text = readRegularFile(agentPaths(root, agent).memory, 'utf8');
    } catch {
      continue;
    }
    for (const doc of documentsOf(agent, 'memory.md', text, 0)) {
      const hay = `${doc.heading}\n${doc.text}`.toLowerCase();
      let distinct = 0;
      let total = 0;
      for (const w of wanted) {
        let n = 0;
        for (let at = hay.indexOf(w); at >= 0 && n < 20; at = hay.indexOf(w, at + w.length)) n++;
        if (n > 0) distinct++;
        total += n;
      }
      if (distinct === 0) continue;
      matches.push({ agent, heading: doc.heading, excerpt: excerptOf(doc.text, query), score: Math.round((distinct + total / 100) * 1000) / 1000 });
    }
  }
  return matches.sort((a, b) => b.score - a.score).slice(0, q.limit);
}
