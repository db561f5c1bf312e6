import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { agentPaths } from '../layout/paths.ts';
import { parseMemory, hasContent } from './format.ts';
import { PALACE_VERSION, writeWing, type MemoryDocument, type Wing } from './palace.ts';
import { openRegular } from '../fs/regular-file.ts';

/**
 * One agent's wing: read its minable files, hash them, cut them into sections and write
 * `palace/wings/<id>.json`. A piscina job (pure apart from reading the files and writing
 * the wing, both idempotent), so several wings are mined in parallel off the actor.
 */

export interface MineWingTask {
  root: string;
  agent: string;
  /** Files relative to the agent folder (the ignore list already applied). */
  files: string[];
  /** The hash the palace holds: when the files still hash to it, nothing is written. */
  knownHash: string | null;
}

export interface MineWingResult {
  agent: string;
  hash: string;
  bytes: number;
  docs: number;
  files: Record<string, [number, number]>;
  /** False when the content hashed to `knownHash` (only the file stats moved). */
  written: boolean;
}

/** The searchable sections of one file. */
export function documentsOf(agent: string, file: string, text: string, firstId: number): MemoryDocument[] {
  const doc = parseMemory(text);
  const out: MemoryDocument[] = [];
  const push = (heading: string, date: string | null, pinned: boolean, body: string) => {
    const trimmed = body.trim();
    if (!trimmed && !heading) return;
    out.push({ id: `${agent}#${firstId + out.length}`, agent, file, heading, date, pinned, text: trimmed });
  };
  const headerLines = doc.header.split('\n');
  const title = headerLines[0]?.startsWith('# ') ? headerLines[0].slice(2).trim() : '';
  const headerBody = (title ? headerLines.slice(1) : headerLines).join('\n');
  if (headerBody.trim()) push(title || path.basename(file), null, false, headerBody);
  for (const b of doc.blocks) {
    if (b.kind === 'region' && !hasContent(b)) continue;
    const body = b.raw.slice(b.raw.indexOf('\n') + 1);
    push(b.heading, b.date, b.pinned, body);
  }
  return out;
}

/** sha256 over names and bytes, 16 hex characters. */
export function hashFiles(contents: { name: string; data: Buffer }[]): string {
  const h = createHash('sha256');
  for (const c of contents) h.update(c.name).update('\0').update(c.data).update('\0');
  return h.digest('hex').slice(0, 16);
}

/**
 * Mines one wing (see the file header).
 * @example mineWing({ root, agent: 'alice', files: ['memory.md'], knownHash: null })
 */
export function mineWing(task: MineWingTask): MineWingResult {
  const dir = agentPaths(task.root, task.agent).dir;
  const contents: { name: string; data: Buffer }[] = [];
  const files: Record<string, [number, number]> = {};
  for (const name of task.files) {
    const file = path.join(dir, name);
    try {
      const { fd, stats: st } = openRegular(file);
      try {
        const data = fs.readFileSync(fd);
        files[name] = [st.mtimeMs, st.size];
        contents.push({ name, data });
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // vanished between the listing and the read: mined next pass
    }
  }
  const hash = hashFiles(contents);
  const bytes = contents.reduce((n, c) => n + c.data.length, 0);
  if (hash === task.knownHash) return { agent: task.agent, hash, bytes, docs: -1, files, written: false };
  const docs: MemoryDocument[] = [];
  for (const c of contents) docs.push(...documentsOf(task.agent, c.name, c.data.toString('utf8'), docs.length));
  const wing: Wing = { version: PALACE_VERSION, agent: task.agent, hash, docs };
  writeWing(task.root, wing);
  return { agent: task.agent, hash, bytes, docs: docs.length, files, written: true };
}
