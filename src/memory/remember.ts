import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { fsyncDir } from '../fs/atomic.ts';
import { HiveError, describeValue } from '../errors.ts';
import { formatEntry, isoDay, separatorAfter } from './format.ts';
import { withFileLock } from './lock.ts';
import { readRegistry } from '../registry/registry.ts';
import { assertRealDirectory } from '../fs/regular-file.ts';
import { openForAppend } from '../fs/append-lines.ts';
import { appendClusterMemory, withClusterFiles } from './cluster-memory.ts';

/** The agent's display name (as ensureAgent heads memory.md with it), else its id. */
function agentName(root: string, agent: string): string {
  try {
    return readRegistry(root).agents[agent]?.name || agent;
  } catch {
    return agent;
  }
}

/** A memory to keep: text (its first line becomes the title) or a title and a body. */
export type MemoryInput = string | { title: string; body?: string };

export interface RememberOptions {
  /** Pinned entries are never condensed (`<!-- PINNED -->` on the heading). */
  pinned?: boolean;
  /** The entry's date (default: today, UTC). */
  date?: Date | string;
}

export interface Remembered {
  agent: string;
  /** The appended markdown (separator not included). */
  text: string;
  /** memory.md's size after the append. */
  size: number;
}

const TITLE_MAX = 80;

function cutTitle(line: string): string {
  const t = line.trim().replace(/\s+/g, ' ');
  if (t.length <= TITLE_MAX) return t;
  const cut = t.slice(0, TITLE_MAX);
  const space = cut.lastIndexOf(' ');
  return `${space > 40 ? cut.slice(0, space) : cut}…`;
}

/** Title and body of an input; a string's first line is the title, the rest the body. */
export function splitInput(input: MemoryInput): { title: string; body: string } {
  if (typeof input === 'object' && input !== null && typeof input.title === 'string') {
    if (input.body !== undefined && typeof input.body !== 'string') {
      throw new HiveError('E_BAD_ARGS', `Expected a memory's body to be a string, got ${describeValue(input.body)}`);
    }
    if (!input.title.trim()) throw new HiveError('E_BAD_ARGS', 'Expected a memory title with some text, got an empty string');
    return { title: cutTitle(input.title), body: input.body ?? '' };
  }
  if (typeof input !== 'string' || !input.trim()) {
    throw new HiveError('E_BAD_ARGS', `Expected a memory to be non-empty text or { title, body }, got ${describeValue(input)}`);
  }
  const text = input.replace(/\r\n/g, '\n').trim();
  const newline = text.indexOf('\n');
  if (newline < 0) return { title: cutTitle(text), body: cutTitle(text) === text ? '' : text };
  return { title: cutTitle(text.slice(0, newline)), body: text.slice(newline + 1).trim() };
}

function dayOf(date: Date | string | undefined): string {
  if (date === undefined) return isoDay(new Date());
  if (typeof date === 'string') {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(Date.parse(date))) {
      throw new HiveError('E_BAD_ARGS', `Expected a memory date as YYYY-MM-DD, got ${describeValue(date)}`);
    }
    return date;
  }
  if (Number.isNaN(date.getTime())) throw new HiveError('E_BAD_ARGS', 'Expected a valid memory date, got an invalid Date');
  return isoDay(date);
}

/**
 * Appends all of `data` or none of it: a write cut short (a full disk) is truncated back
 * to `size`, where the file ended before, and the error thrown; an entry is never left
 * half-written.
 */
function appendWhole(fd: number, data: Buffer, size: number): void {
  let off = 0;
  try {
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
  } catch (err) {
    if (off > 0) fs.ftruncateSync(fd, size);
    throw err;
  }
}

/**
 * Appends an entry to `agents/<agent>/memory.md`, durably (fsync before it returns),
 * under the file's lock, so a reflector swapping in a condensed version either sees the
 * entry in the file it re-reads or has not taken the lock yet: never loses it.
 *
 * On disk after a crash: before the fsync the entry may be missing or cut short at the
 * end of the file (never in the middle: appends only extend it); after, it is there.
 * @example await remember('/hive', 'alice', 'Deploys go out on Tuesdays', { pinned: true })
 */
export async function remember(root: string, agent: string, input: MemoryInput, options: RememberOptions = {}): Promise<Remembered> {
  const p = agentPaths(root, agent);
  const { title, body } = splitInput(input);
  const text = formatEntry({ title, body, date: dayOf(options.date), pinned: options.pinned === true });
  // A symlink in the agent folder's place: the entry would be appended outside the hive.
  assertRealDirectory(p.dir, `agents/${agent}`);
  if (!fs.existsSync(p.dir)) {
    throw new HiveError('E_UNKNOWN_AGENT', `Agent "${agent}" does not exist in ${root}; spawn it first (hive spawn) or create it with ensureAgent`);
  }
  // Cluster mode: the memory lives in the cluster, the folder holds its mirror (src/memory/cluster-memory.ts).
  const inCluster = await withClusterFiles(root, (files) =>
    appendClusterMemory(root, files, agent, (base) => {
      const head = base.length === 0 ? `# ${agentName(root, agent)}\n\n## Memories\n\n` : '';
      const tail = (head || base.subarray(Math.max(0, base.length - 2)).toString('latin1')).slice(-2);
      return Buffer.from(head + separatorAfter(tail) + text);
    }),
  );
  if (inCluster.cluster) return { agent, text, size: inCluster.value.length };
  return withFileLock(p.memory, () => {
    // O_APPEND: even a writer that ignores the lock (`echo >> memory.md`) is never overwritten.
    const created = !fs.existsSync(p.memory);
    // Regular files only: a symlink is never written through, a FIFO never written into (E_NOT_REGULAR).
    const { fd } = openForAppend(p.memory, `agents/${agent}/memory.md`);
    try {
      if (created) fs.writeSync(fd, `# ${agentName(root, agent)}\n\n## Memories\n\n`);
      const size = fs.fstatSync(fd).size;
      const tail = Buffer.alloc(Math.min(2, size));
      if (tail.length > 0) fs.readSync(fd, tail, 0, tail.length, size - tail.length);
      appendWhole(fd, Buffer.from(separatorAfter(tail.toString('latin1')) + text), size);
      fs.fdatasyncSync(fd);
      if (created) fsyncDir(p.dir);
      return { agent, text, size: fs.fstatSync(fd).size };
    } finally {
      fs.closeSync(fd);
    }
  });
}
