import type { Options, SearchOptions } from 'minisearch';
import { processTerm, tokenize } from './terms.ts';
import type { MemoryDocument } from './palace.ts';

/**
 * The built-in index's settings, in one place: the miner builds with them and every
 * searcher loads with them (MiniSearch needs the same options on both sides).
 *
 * Query terms of 4+ characters also match as prefixes (with the light stemmer this
 * joins "deploy" and "deployment"); fuzzy matching is off: on 10 MB of memory it
 * tripled p99 query time for little recall on the labelled set.
 */
export const SEARCH_OPTIONS: SearchOptions = {
  boost: { heading: 2 },
  prefix: (term) => term.length >= 4,
  fuzzy: false,
  combineWith: 'OR',
};

export const INDEX_OPTIONS: Options<MemoryDocument> = {
  fields: ['heading', 'text'],
  storeFields: ['agent', 'heading', 'text'],
  tokenize,
  processTerm,
  searchOptions: SEARCH_OPTIONS,
};
