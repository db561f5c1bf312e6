import { termsOf } from './terms.ts';

/** One memory entry handed to a summarizer. */
export interface SummaryEntry {
  heading: string;
  date: string | null;
  title: string;
  body: string;
}

/**
 * The built-in condenser: extractive, no model. Each old entry keeps its heading (date
 * and title) and its most informative sentences, in their original order:
 *
 *   score(sentence) = Σ over its distinct terms of tf(term in entry) · idf(term across entries)
 *                     / √(terms in sentence)  + a bonus for numbers, dates, names and code
 *
 * so sentences that carry the entry's own rare vocabulary win over filler. Each entry
 * gets a share of the budget proportional to its size (at least ~100 bytes). When
 * headings alone overflow the budget, the oldest entries are merged per month, then per
 * year, keeping every title as a bullet.
 */

const MIN_SHARE = 100;

function sentencesOf(body: string): string[] {
  return body
    .replace(/\r\n/g, '\n')
    .split(/\n\s*\n|\n(?=\s*[-*+]\s)|(?<=[.!?])\s+(?=[A-Z0-9"'(`])/)
    .map((s) => s.replace(/^\s*[-*+]\s+/, '').replace(/\s+/g, ' ').trim())
    .filter((s) => s.length > 0 && !/^#{1,6}\s/.test(s));
}

function bonus(sentence: string): number {
  let b = 0;
  if (/\d/.test(sentence)) b += 0.5;
  if (/`[^`]+`|\/[\w.-]+\/|\w+\.\w{2,4}\b/.test(sentence)) b += 0.3;
  if (/\s[A-Z][a-z]+/.test(sentence)) b += 0.2;
  return b;
}

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, Math.max(20, max - 1));
  const space = head.lastIndexOf(' ');
  return `${space > max / 2 ? head.slice(0, space) : head}…`;
}

/** The best sentences of one entry within `budget` characters. */
function condenseEntry(body: string, budget: number, idf: Map<string, number>): string {
  const sentences = sentencesOf(body);
  if (body.trim().length <= budget) return body.trim();
  const tf = new Map<string, number>();
  for (const t of termsOf(body)) tf.set(t, (tf.get(t) ?? 0) + 1);
  const scored = sentences.map((s, i) => {
    const terms = termsOf(s);
    const distinct = new Set(terms);
    let score = 0;
    for (const t of distinct) score += (tf.get(t) ?? 0) * (idf.get(t) ?? 0);
    return { i, s, score: score / Math.sqrt(Math.max(1, terms.length)) + bonus(s) + (i === 0 ? 0.3 : 0) };
  });
  const chosen: typeof scored = [];
  let used = 0;
  for (const c of [...scored].sort((a, b) => b.score - a.score)) {
    if (used + c.s.length + 1 > budget) continue;
    chosen.push(c);
    used += c.s.length + 1;
  }
  if (chosen.length === 0 && scored.length > 0) {
    const best = [...scored].sort((a, b) => b.score - a.score)[0]!;
    return cut(best.s, budget);
  }
  return chosen
    .sort((a, b) => a.i - b.i)
    .map((c) => c.s)
    .join(' ');
}

/** A condensed item; headings inside its body are flattened (they would split the region). */
function item(heading: string, body: string): string {
  const flat = body.replace(/^#{1,6}\s+/gm, '').trim();
  return flat ? `### ${heading}\n\n${flat}\n\n` : `### ${heading}\n\n`;
}

/** Merges entries by a key (month, then year): one item per group, one bullet per title. */
function merge(entries: SummaryEntry[], keyOf: (e: SummaryEntry) => string, budget: number, idf: Map<string, number>): string {
  const groups = new Map<string, SummaryEntry[]>();
  for (const e of entries) groups.set(keyOf(e), [...(groups.get(keyOf(e)) ?? []), e]);
  const perBullet = Math.max(40, Math.floor(budget / Math.max(1, entries.length)) - 20);
  let out = '';
  for (const [key, group] of groups) {
    const bullets = group.map((e) => {
      const gist = condenseEntry(e.body, perBullet, idf);
      return `- ${e.heading}${gist ? `: ${cut(gist, perBullet)}` : ''}`;
    });
    out += item(`${key} — ${group.length} entr${group.length === 1 ? 'y' : 'ies'}`, bullets.join('\n'));
  }
  return out;
}

/**
 * Condenses entries into `### heading` items under about `budget` bytes.
 * @example extractiveSummary([{ heading: '2026-01-02 — Kickoff', date: '2026-01-02', title: 'Kickoff', body: '…' }], 400)
 */
export function extractiveSummary(entries: SummaryEntry[], budget: number): string {
  if (entries.length === 0) return '';
  const df = new Map<string, number>();
  for (const e of entries) for (const t of new Set(termsOf(`${e.title} ${e.body}`))) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = new Map<string, number>();
  for (const [t, n] of df) idf.set(t, Math.log(1 + entries.length / n));
  const total = entries.reduce((n, e) => n + e.body.length, 0) || 1;
  const headings = entries.reduce((n, e) => n + e.heading.length + 8, 0);
  const room = Math.max(0, budget - headings);
  const share = (e: SummaryEntry) => Math.max(MIN_SHARE, Math.floor((room * e.body.length) / total));
  const single = entries.map((e) => item(e.heading, condenseEntry(e.body, share(e), idf))).join('');
  if (Buffer.byteLength(single) <= budget || entries.length < 4) return single;
  const month = merge(entries, (e) => e.date?.slice(0, 7) ?? 'undated', budget, idf);
  if (Buffer.byteLength(month) <= budget) return month;
  const year = merge(entries, (e) => e.date?.slice(0, 4) ?? 'undated', budget, idf);
  return Buffer.byteLength(year) < Buffer.byteLength(month) ? year : month;
}
