/**
 * Terms: how memory text becomes index terms. Shared by the index, the plain-text
 * fallback and the extractive condenser, so all three agree on what a word is.
 *
 * Stop words are dropped (they match nearly every entry and only cost query time) and
 * words are cut to a crude stem, one suffix at a time, so that "deployed", "deploying"
 * and "deployments" meet at "deploy". Combined with prefix matching of query terms
 * this covers most inflections without a dictionary.
 */

const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other ' +
    'our ours ourselves out over own same she should so some such than that the their theirs them themselves then there ' +
    'these they this those through to too under until up very was we were what when where which while who whom why will ' +
    'with would you your yours yourself yourselves also us may might must shall via per ie eg etc do does did done get got ' +
    'one two its it\'s we\'re don\'t let\'s'
  ).split(/\s+/),
);

/** Longest first; a suffix is cut only when at least 3 characters remain. */
const SUFFIXES = ['ations', 'ation', 'ings', 'ing', 'ments', 'ment', 'ness', 'ions', 'ion', 'ates', 'ated', 'ate', 'ers', 'er', 'ies', 'ed', 'es', 's'];

/**
 * A light suffix-stripping stemmer (not Porter: smaller, and good enough with prefix search).
 * @example stem('deployments') // 'deploy'
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let w = word;
  for (const suffix of SUFFIXES) {
    if (!w.endsWith(suffix) || w.length - suffix.length < 3) continue;
    if (suffix === 's' && /(ss|us|is)$/.test(w)) break;
    w = w.slice(0, -suffix.length) + (suffix === 'ies' ? 'y' : '');
    break;
  }
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  if (w.length > 3 && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(ll|ss|ff|zz)$/.test(w)) w = w.slice(0, -1);
  return w;
}

/** Splits on anything that is not a letter, digit, `_`, `.` inside a token, or `'`. */
const WORD = /[\p{L}\p{N}_]+(?:['.][\p{L}\p{N}_]+)*/gu;

/** Raw lower-cased words, stop words included. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/**
 * One index term for a word, or null when it carries no information (a stop word, a
 * single character). Used as MiniSearch's `processTerm`.
 */
export function processTerm(word: string): string | null {
  const w = word.toLowerCase();
  if (w.length < 2 || STOP_WORDS.has(w)) return null;
  return stem(w);
}

/** The index terms of a text, in order (duplicates kept). */
export function termsOf(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) {
    const t = processTerm(w);
    if (t !== null) out.push(t);
  }
  return out;
}

/** MiniSearch's tokenizer: words as above (keeps `v2.1`, `don't`, `node_modules`). */
export function tokenize(text: string): string[] {
  return text.match(WORD) ?? [];
}
