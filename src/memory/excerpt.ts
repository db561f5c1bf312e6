import { termsOf } from './terms.ts';

const MAX = 240;

/**
 * The most telling piece of a section for a query: the sentence (or line) with the most
 * query terms, widened with its neighbours up to ~240 characters.
 * @example excerptOf('We met. Deploys go out on Tuesdays.', 'deploy day') // 'Deploys go out on Tuesdays.'
 */
export function excerptOf(text: string, query: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= MAX) return flat;
  const wanted = new Set(termsOf(query));
  const pieces = flat.split(/(?<=[.!?])\s+/);
  let best = 0;
  let bestScore = -1;
  pieces.forEach((p, i) => {
    const score = termsOf(p).filter((t) => wanted.has(t)).length;
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  let out = pieces[best]!;
  for (let next = best + 1; next < pieces.length && out.length + pieces[next]!.length + 1 <= MAX; next++) out += ` ${pieces[next]}`;
  if (out.length > MAX) out = `${out.slice(0, MAX - 1).replace(/\s+\S*$/, '')}…`;
  return best > 0 ? `…${out}` : out;
}
