import type MiniSearch from 'minisearch';
import type { SearchOptions } from 'minisearch';
import type { MemoryDocument } from './palace.ts';

/**
 * MiniSearch's own ranking (BM25+, field boosts, prefix weights, the "matched query
 * terms" quality factor), computed in a top-k loop over typed arrays.
 *
 * Why: `MiniSearch#search` builds a result object (with a match map) for every matching
 * document and sorts them all. On 10 MB of memory a 3-word query matches thousands of
 * sections, and that bookkeeping, not the postings walk, was nearly all of the time
 * (README, "Memory": search latency). Here scores accumulate in a Float64Array and only the best `k` become objects.
 *
 * MiniSearch declares the index fields protected (its extension point for subclasses);
 * `loadJS` builds a plain MiniSearch, so they are read through the typed view below. The
 * version is pinned, and a test checks that `topK` ranks exactly as `search` does.
 */

type FieldTermData = Map<number, Map<number, number>>;

interface TermMap {
  get(term: string): FieldTermData | undefined;
  atPrefix(prefix: string): Iterable<[string, FieldTermData]>;
}

interface Internals {
  _index: TermMap;
  _documentCount: number;
  _documentIds: Map<number, string>;
  _fieldIds: Record<string, number>;
  _fieldLength: Map<number, number[]>;
  _avgFieldLength: number[];
  _storedFields: Map<number, Record<string, unknown>>;
  _nextId: number;
  _dirtCount: number;
  _options: { tokenize: (text: string) => string[]; processTerm: (term: string) => string | string[] | null | undefined | false };
}

export interface ScoredDocument {
  id: string;
  score: number;
  fields: Record<string, unknown>;
}

const PREFIX_WEIGHT = 0.375;
const BM25 = { k: 1.2, b: 0.7, d: 0.5 };

/** Reused per index: scores, matched-term masks and the list of touched documents. */
const scratch = new WeakMap<object, { scores: Float64Array; masks: Uint32Array }>();

function buffers(ms: Internals): { scores: Float64Array; masks: Uint32Array } {
  let b = scratch.get(ms);
  if (!b || b.scores.length < ms._nextId) {
    const size = Math.max(1024, Math.ceil(ms._nextId * 1.5));
    b = { scores: new Float64Array(size), masks: new Uint32Array(size) };
    scratch.set(ms, b);
  }
  return b;
}

/**
 * The best `k` documents for `query`, as `index.search(query, options)` would rank them.
 * @example topK(index, 'rollback procedure', 5, SEARCH_OPTIONS)
 */
export function topK(
  index: MiniSearch<MemoryDocument>,
  query: string,
  k: number,
  options: SearchOptions,
  keep?: (fields: Record<string, unknown>) => boolean,
): ScoredDocument[] {
  const ms = index as unknown as Internals;
  const terms: string[] = [];
  for (const token of ms._options.tokenize(query)) {
    const t = ms._options.processTerm(token);
    if (Array.isArray(t)) terms.push(...t.filter(Boolean));
    else if (t) terms.push(t);
  }
  const distinct = [...new Set(terms)].slice(0, 32);
  if (distinct.length === 0) return [];
  const { scores, masks } = buffers(ms);
  const touched: number[] = [];
  const boosts = Object.entries(ms._fieldIds).map(([field, id]) => ({ id, boost: (options.boost?.[field] as number | undefined) ?? 1 }));
  const live = ms._dirtCount > 0;

  const score = (data: FieldTermData | undefined, weight: number, bit: number) => {
    if (!data) return;
    for (const { id: fieldId, boost } of boosts) {
      const postings = data.get(fieldId);
      if (!postings) continue;
      let matching = postings.size;
      if (live) for (const docId of postings.keys()) if (!ms._documentIds.has(docId)) matching--;
      const idf = Math.log(1 + (ms._documentCount - matching + 0.5) / (matching + 0.5));
      const avg = ms._avgFieldLength[fieldId]!;
      const w = weight * boost * idf;
      for (const [docId, tf] of postings) {
        if (live && !ms._documentIds.has(docId)) continue;
        const length = ms._fieldLength.get(docId)![fieldId]!;
        const s = w * (BM25.d + (tf * (BM25.k + 1)) / (tf + BM25.k * (1 - BM25.b + (BM25.b * length) / avg)));
        if (masks[docId] === 0) touched.push(docId);
        scores[docId]! += s;
        masks[docId]! |= bit;
      }
    }
  };

  terms.forEach((term, i) => {
    const slot = distinct.indexOf(term);
    if (slot < 0) return;
    const bit = 1 << slot;
    score(ms._index.get(term), 1, bit);
    const prefix = typeof options.prefix === 'function' ? options.prefix(term, i, terms) : options.prefix === true;
    if (!prefix) return;
    for (const [derived, data] of ms._index.atPrefix(term)) {
      const distance = derived.length - term.length;
      if (distance === 0) continue;
      score(data, (PREFIX_WEIGHT * derived.length) / (derived.length + 0.3 * distance), bit);
    }
  });

  const best: { docId: number; score: number }[] = [];
  for (const docId of touched) {
    let bits = masks[docId]!;
    let quality = 0;
    for (; bits; bits &= bits - 1) quality++;
    const s = scores[docId]! * quality;
    scores[docId] = 0;
    masks[docId] = 0;
    if (best.length === k && s <= best[k - 1]!.score) continue;
    const fields = ms._storedFields.get(docId) ?? {};
    if (keep && !keep(fields)) continue;
    let at = best.length;
    while (at > 0 && best[at - 1]!.score < s) at--;
    best.splice(at, 0, { docId, score: s });
    if (best.length > k) best.pop();
  }
  return best.map((b) => ({ id: ms._documentIds.get(b.docId)!, score: b.score, fields: ms._storedFields.get(b.docId) ?? {} }));
}
