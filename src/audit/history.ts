import fs from 'node:fs';
import path from 'node:path';
import { git } from './git.ts';

export interface AuditEntry {
  commit: string;
  at: string;
  subject: string;
  body: string;
  files: { status: string; path: string }[];
}

const RS = '\x1e';
const US = '\x1f';

/**
 * The audit trail's history, newest first.
 * @example const entries = await auditHistory(root, 20);
 */
export async function auditHistory(root: string, limit = 100): Promise<AuditEntry[]> {
  if (!fs.existsSync(path.join(root, '.git'))) return [];
  const r = await git(root, ['log', `-n${limit}`, `--format=${RS}%H${US}%aI${US}%s${US}%b${US}`, '--name-status', '--no-renames']);
  if (r.exitCode !== 0) {
    if (/does not have any commits/.test(r.stderr)) return [];
    throw new Error(`git log failed in ${root}: ${r.stderr.trim()}`);
  }
  const out: AuditEntry[] = [];
  for (const chunk of r.stdout.split(RS).slice(1)) {
    const [commit, at, subject, body, rest] = chunk.split(US);
    const files = (rest ?? '')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => {
        const [status, ...p] = l.split('\t');
        return { status: status ?? '?', path: p.join('\t') };
      });
    out.push({ commit: commit!, at: at!, subject: subject!, body: (body ?? '').trim(), files });
  }
  return out;
}
