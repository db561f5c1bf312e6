/**
 * The memory.md format (docs/architecture.md, "Memory"), parsed without losing a byte.
 *
 *   # Name                                   header: everything before the first `## `
 *   ## Pinned | ## Condensed | ## Recent     region markers (written by the reflector)
 *   ## Memories                              the marker `ensureAgent` writes
 *   ## 2026-03-01 — Title <!-- PINNED -->    an entry: from its heading to the next `## `
 *   ### 2026-02-01 — Title                   a condensed item (inside `## Condensed` only)
 *
 * Every entry keeps its raw text (heading line included, trailing blank lines included),
 * so `header + blocks.map(raw).join('')` is the file again, byte for byte. `### `
 * headings outside the Condensed region are part of the entry that holds them.
 */

export const PINNED_MARKER = '<!-- PINNED -->';
export const REGIONS = ['Pinned', 'Condensed', 'Recent', 'Memories'] as const;
export type RegionName = (typeof REGIONS)[number];

const DATED = /^(\d{4}-\d{2}-\d{2})\s+[—–-]\s+(.*)$/;
const DATE_ONLY = /^(\d{4}-\d{2}-\d{2})\s*$/;

export interface MemoryBlock {
  /** `entry` (a `## ` section), `item` (a `### ` section in Condensed), `region` (a marker). */
  kind: 'entry' | 'item' | 'region';
  /** The raw text, byte-identical to the file. */
  raw: string;
  /** The heading without `#`s and the pinned marker. */
  heading: string;
  date: string | null;
  title: string;
  pinned: boolean;
  /** The region this block sits in (`null` before any marker). */
  region: RegionName | null;
}

export interface MemoryDoc {
  header: string;
  blocks: MemoryBlock[];
}

function headingParts(line: string, hashes: number): { heading: string; date: string | null; title: string } {
  const heading = line.slice(hashes + 1).replace(PINNED_MARKER, '').trim();
  const dated = DATED.exec(heading);
  if (dated) return { heading, date: dated[1]!, title: dated[2]!.trim() };
  const dateOnly = DATE_ONLY.exec(heading);
  if (dateOnly) return { heading, date: dateOnly[1]!, title: '' };
  return { heading, date: null, title: heading };
}

function regionOf(line: string): RegionName | null {
  const name = line.slice(3).trim();
  return (REGIONS as readonly string[]).includes(name) ? (name as RegionName) : null;
}

/**
 * Splits memory.md into its header and blocks.
 * @example parseMemory('# Ann\n\n## 2026-01-02 — Kickoff\n\nWe met.\n').blocks[0].title // 'Kickoff'
 */
export function parseMemory(text: string): MemoryDoc {
  const lines = text.split(/(?<=\n)/);
  let header = '';
  const blocks: MemoryBlock[] = [];
  let current: MemoryBlock | null = null;
  let region: RegionName | null = null;
  for (const line of lines) {
    const bare = line.replace(/\r?\n$/, '');
    let started: MemoryBlock | null = null;
    if (bare.startsWith('## ')) {
      const marker = regionOf(bare);
      if (marker) {
        region = marker;
        started = { kind: 'region', raw: '', heading: marker, date: null, title: marker, pinned: false, region };
      } else {
        started = { kind: 'entry', raw: '', ...headingParts(bare, 2), pinned: false, region };
      }
    } else if (bare.startsWith('### ') && region === 'Condensed' && (current?.kind === 'region' || current?.kind === 'item')) {
      started = { kind: 'item', raw: '', ...headingParts(bare, 3), pinned: false, region };
    }
    if (started) {
      current = started;
      blocks.push(current);
    }
    if (current) current.raw += line;
    else header += line;
  }
  for (const b of blocks) b.pinned = b.kind !== 'region' && (b.raw.includes(PINNED_MARKER) || b.region === 'Pinned');
  return { header, blocks };
}

/** Non-blank text under a region marker (free text somebody wrote there) is content too. */
export function hasContent(block: MemoryBlock): boolean {
  return block.raw.split('\n').slice(1).some((l) => l.trim() !== '');
}

/** `YYYY-MM-DD` of a date in UTC. */
export function isoDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export interface EntryInput {
  title: string;
  body: string;
  date: string;
  pinned: boolean;
}

/**
 * Demotes headings inside a body that would otherwise start a new entry or region
 * (`#`/`##` → `###`): an entry's body must never split the file's structure.
 */
export function sanitizeBody(body: string): string {
  return body
    .replace(/\r\n/g, '\n')
    .replace(/^#{1,2}(?=\s)/gm, '###')
    .replace(/\s+$/, '');
}

/** The markdown of one entry, ending with a newline. */
export function formatEntry(e: EntryInput): string {
  const title = e.title.replace(/\s+/g, ' ').replace(/^#+\s*/, '').trim();
  const heading = `## ${e.date} — ${title}${e.pinned ? ` ${PINNED_MARKER}` : ''}`;
  const body = sanitizeBody(e.body);
  return body ? `${heading}\n\n${body}\n` : `${heading}\n`;
}

/** What to put between existing text and an appended block so it starts a fresh paragraph. */
export function separatorAfter(text: string): string {
  if (text.length === 0 || text.endsWith('\n\n')) return '';
  return text.endsWith('\n') ? '\n' : '\n\n';
}
