/** Small statistics helpers for the benchmark scripts. */

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

export function summarize(samplesMs: number[]) {
  const s = [...samplesMs].sort((a, b) => a - b);
  return { n: s.length, p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1] ?? NaN) };
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Runs `fn` `rounds` times and returns the median of the returned rates. */
export async function medianOf(rounds: number, fn: () => Promise<number> | number): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < rounds; i++) rates.push(await fn());
  return median(rates);
}

/** The last three within 10 % of each other: a warm-up's rate (or CPU) has settled. */
export function settled(xs: number[]): boolean {
  const last = xs.slice(-3);
  return last.length === 3 && Math.max(...last) <= 1.1 * Math.min(...last);
}
