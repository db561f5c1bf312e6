import { errorMessage } from '../errors.ts';
import { hasContent, parseMemory, type MemoryBlock } from './format.ts';
import { extractiveSummarizer, summarizerFromSpec, type Summarizer, type SummarizerSpec, type SummaryEntry } from './summarizer.ts';

/**
 * Condensing a memory.md, as text in and text out (no I/O: `reflect.ts` does the disk
 * part). The result has three regions:
 *
 *   # Name
 *   ## Pinned      every pinned entry, byte for byte, in file order
 *   ## Condensed   the older entries, summarized (`### date — title` items)
 *   ## Recent      the newest `keepRecent` entries, byte for byte, in file order
 *
 * and must pass `verifyCondensed` before anybody writes it.
 */

export interface CondenseSettings {
  /** Newest entries kept byte-identical. */
  keepRecent: number;
  /** The size the whole file should come down to, in bytes. */
  targetBytes: number;
}

export interface CondensePlan {
  header: string;
  pinned: MemoryBlock[];
  old: MemoryBlock[];
  recent: MemoryBlock[];
}

export interface CondenseResult {
  /** The condensed file, or null when there was nothing to condense. */
  text: string | null;
  /** Which summarizer wrote the Condensed region (and why it fell back, if it did). */
  summarizer: string;
  fallback: string | null;
  before: number;
  after: number;
  condensed: number;
}

/** Which blocks go where. */
export function planCondense(text: string, keepRecent: number): CondensePlan {
  const doc = parseMemory(text);
  // Free text under a region marker is content; under `## Pinned` it is pinned (kept
  // without its marker line, which assemble() writes once).
  const blocks = doc.blocks
    .filter((b) => b.kind !== 'region' || hasContent(b))
    .map((b) => (b.kind === 'region' && b.heading === 'Pinned' ? { ...b, raw: b.raw.slice(b.raw.indexOf('\n') + 1).replace(/^\n+/, ''), pinned: true } : b));
  const pinned = blocks.filter((b) => b.pinned);
  const rest = blocks.filter((b) => !b.pinned);
  const entryIdx = rest.map((b, i) => (b.kind === 'entry' ? i : -1)).filter((i) => i >= 0);
  const recentIdx = new Set(keepRecent > 0 ? entryIdx.slice(-keepRecent) : []);
  return { header: doc.header, pinned, old: rest.filter((_, i) => !recentIdx.has(i)), recent: rest.filter((_, i) => recentIdx.has(i)) };
}

function paragraph(text: string): string {
  if (text === '') return '';
  return text.endsWith('\n\n') ? text : text.endsWith('\n') ? `${text}\n` : `${text}\n\n`;
}

function bodyOf(b: MemoryBlock): string {
  return b.raw.slice(b.raw.indexOf('\n') + 1).trim();
}

/** Keeps a summary inside its region: its own headings become `###` items. */
function sanitizeSummary(summary: string): string {
  return paragraph(summary.replace(/\r\n/g, '\n').replace(/^#{1,2}(?=\s)/gm, '###').trim());
}

/** Assembles the three regions. */
export function assemble(plan: CondensePlan, condensed: string): string {
  const header = paragraph(plan.header.trimEnd() ? plan.header : '');
  return (
    header +
    '## Pinned\n\n' +
    plan.pinned.map((b) => paragraph(b.raw)).join('') +
    '## Condensed\n\n' +
    condensed +
    '## Recent\n\n' +
    plan.recent.map((b) => b.raw).join('')
  );
}

/**
 * Checks a condensed file against the original: every pinned entry kept verbatim, the
 * recent entries byte-identical at the end, every condensed entry's date and title kept,
 * the structure parses back, and it is smaller. Returns the problems (empty: safe to write).
 */
export function verifyCondensed(before: string, after: string, keepRecent: number): string[] {
  const problems: string[] = [];
  const plan = planCondense(before, keepRecent);
  for (const b of plan.pinned) {
    if (!after.includes(b.raw.trimEnd())) problems.push(`pinned entry "${b.heading}" is not kept verbatim`);
  }
  const recent = plan.recent.map((b) => b.raw).join('');
  if (!after.endsWith(recent)) problems.push('the recent entries are not byte-identical at the end');
  if (Buffer.byteLength(after) >= Buffer.byteLength(before)) problems.push(`not smaller (${Buffer.byteLength(after)} ≥ ${Buffer.byteLength(before)} bytes)`);
  const reparsed = planCondense(after, keepRecent);
  if (reparsed.recent.length !== plan.recent.length || reparsed.pinned.length < plan.pinned.length) {
    problems.push('the result does not parse back into the same pinned and recent entries');
  }
  // Condensing may shorten what an entry says, never lose that it was there: each old
  // entry's date and title must be in the Condensed region (a one-line "summary" of 149
  // entries is not a condensed memory).
  const region = condensedRegion(after);
  const lost = plan.old.filter((b) => (b.kind === 'entry' || b.kind === 'item') && ((b.date !== null && !region.includes(b.date)) || (b.title !== '' && !region.includes(b.title))));
  if (lost.length > 0) {
    const names = lost.slice(0, 3).map((b) => `"${b.heading}"`).join(', ');
    problems.push(`${lost.length} condensed entr${lost.length === 1 ? 'y lost its' : 'ies lost their'} date or title (${names}${lost.length > 3 ? ', ...' : ''})`);
  }
  return problems;
}

/** The text between `## Condensed` and `## Recent` (what a summarizer wrote). */
function condensedRegion(text: string): string {
  const start = text.indexOf('\n## Condensed\n');
  if (start < 0) return '';
  const end = text.indexOf('\n## Recent\n', start);
  return text.slice(start, end < 0 ? undefined : end);
}

function toSummaryEntry(b: MemoryBlock): SummaryEntry {
  return { heading: b.heading, date: b.date, title: b.title, body: bodyOf(b) };
}

/**
 * Condenses `text` with `summarize`; if that throws or its result fails verification,
 * the built-in extractive condenser takes over (and the reason is reported).
 * @example const r = await condenseText(memory, { keepRecent: 10, targetBytes: 32_768 }, extractiveSummarizer(), 'alice');
 */
export async function condenseText(text: string, settings: CondenseSettings, summarize: Summarizer, agent: string, name = 'custom'): Promise<CondenseResult> {
  const before = Buffer.byteLength(text);
  const plan = planCondense(text, settings.keepRecent);
  if (plan.old.length === 0) return { text: null, summarizer: name, fallback: null, before, after: before, condensed: 0 };
  const oldBytes = plan.old.reduce((n, b) => n + Buffer.byteLength(b.raw), 0);
  const fixed = before - oldBytes;
  const targetBytes = Math.max(Math.min(oldBytes / 2, settings.targetBytes - fixed), Math.min(oldBytes / 2, 1_024));
  const request = { agent, entries: plan.old.map(toSummaryEntry), targetBytes: Math.floor(targetBytes) };
  let fallback: string | null = null;
  if (name !== 'extractive') {
    try {
      const out = assemble(plan, sanitizeSummary(await summarize(request)));
      const problems = verifyCondensed(text, out, settings.keepRecent);
      if (problems.length === 0) return { text: out, summarizer: name, fallback: null, before, after: Buffer.byteLength(out), condensed: plan.old.length };
      fallback = problems.join('; ');
    } catch (err) {
      fallback = errorMessage(err);
    }
  }
  const out = assemble(plan, sanitizeSummary(await extractiveSummarizer()(request)));
  return { text: out, summarizer: 'extractive', fallback, before, after: Buffer.byteLength(out), condensed: plan.old.length };
}

/** A condense job as it crosses to a pool thread. */
export interface CondenseTask {
  agent: string;
  text: string;
  settings: CondenseSettings;
  summarizer: SummarizerSpec;
}

export function condenseTask(task: CondenseTask): Promise<CondenseResult> {
  const name = task.summarizer.kind === 'command' ? `command:${task.summarizer.command}` : 'extractive';
  return condenseText(task.text, task.settings, summarizerFromSpec(task.summarizer), task.agent, name);
}

