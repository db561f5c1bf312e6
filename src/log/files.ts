import fs from 'node:fs';
import path from 'node:path';
import { hivePaths } from '../layout/paths.ts';

/**
 * The event log on disk: the live file `log.jsonl` plus rotated files `log-<n>.jsonl`,
 * `n` increasing with age order reversed (a higher `n` is newer). Reading every rotated
 * file in ascending `n`, then `log.jsonl`, gives the events in the order they were written.
 */

const ROTATED = /^log-(\d{6,})\.jsonl$/;

export function rotatedLogName(n: number): string {
  return `log-${String(n).padStart(6, '0')}.jsonl`;
}

export interface RotatedLog {
  n: number;
  file: string;
}

/** Rotated log files, oldest first. */
export function listRotatedLogs(root: string): RotatedLog[] {
  const dir = hivePaths(root).root;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: RotatedLog[] = [];
  for (const name of names) {
    const m = ROTATED.exec(name);
    if (m) out.push({ n: Number(m[1]), file: path.join(dir, name) });
  }
  return out.sort((a, b) => a.n - b.n);
}
