import { parseMemory } from './format.ts';

/** When a memory is oversized: at least `minBytes`, and over `maxBytes` or `maxEntries` entries. */
export interface CondenseThresholds {
  minBytes: number;
  maxBytes: number;
  maxEntries: number;
}

/** Dated and undated `## ` entries (condensed items and region markers not counted). */
export function countEntries(text: string): number {
  return parseMemory(text).blocks.filter((b) => b.kind === 'entry').length;
}

/**
 * The reflector's trigger (docs/architecture.md, "Memory"; defaults ≥ 16 KiB and (> 64 KiB or > 50 entries)).
 * @example needsCondense(70_000, 12, { minBytes: 16_384, maxBytes: 65_536, maxEntries: 50 }) // true
 */
export function needsCondense(bytes: number, entries: number, t: CondenseThresholds): boolean {
  return bytes >= t.minBytes && (bytes > t.maxBytes || entries > t.maxEntries);
}
