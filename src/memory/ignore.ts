import fs from 'node:fs';
import path from 'node:path';
import { hiveModes } from '../fs/modes.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * The per-agent ignore list: `agents/<id>/.mineignore`, gitignore syntax (a subset:
 * `name`, `dir/`, `*.ext`, `/anchored`, `a/**`, `!negation`, `#` comments). The miner
 * reads text files of the agent folder that the list does not exclude: `memory.md`
 * and any notes kept beside it, never queues, state or sessions. The same filtered
 * set is what MemPalace mines (it is staged into the palace first).
 */

export const IGNORE_FILE = '.mineignore';

/** Always ignored (an agent's `.mineignore` comes after, so `!identity.md` re-includes). */
export const DEFAULT_IGNORE = ['identity.md', 'inbox/', 'outbox/', 'sessions/', '*.json', '*.jsonl', '*.wal'];

/** Written when an agent has no `.mineignore` yet. */
const IGNORE_TEMPLATE = [
  '# Files the memory miner must not index, gitignore syntax, one pattern a line.',
  `# Always ignored: ${DEFAULT_IGNORE.join(' ')} (a "!pattern" here re-includes).`,
  '# memory.md is always mined.',
  '',
].join('\n');

/** Only these are mined: plain text a person or an agent wrote. */
const TEXT_FILE = /\.(md|markdown|txt)$/i;
const MAX_DEPTH = 3;
const MAX_FILES = 200;

interface Rule {
  negate: boolean;
  dirOnly: boolean;
  regex: RegExp;
}

function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        out += '.*';
        i += 1;
        if (glob[i + 1] === '/') i += 1;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return out;
}

/**
 * Compiles ignore lines into a predicate over folder-relative paths (`/` separators).
 * @example compileIgnore(['*.json', 'inbox/'])('inbox/x.md', false) // true
 */
export function compileIgnore(lines: string[]): (rel: string, isDir: boolean) => boolean {
  const rules: Rule[] = [];
  for (const raw of lines) {
    let line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.startsWith('/') || line.includes('/');
    if (line.startsWith('/')) line = line.slice(1);
    if (!line) continue;
    const body = globToRegex(line);
    rules.push({ negate, dirOnly, regex: new RegExp(anchored ? `^${body}$` : `(^|/)${body}$`) });
  }
  return (rel, isDir) => {
    let ignored = false;
    for (const r of rules) {
      if (r.dirOnly && !isDir) continue;
      if (r.regex.test(rel)) ignored = !r.negate;
    }
    return ignored;
  };
}

/** The defaults, the agent's `.mineignore` (created from a template when missing), then config extras. */
export function ignoreLines(agentDir: string, extra: string[] = [], create = true): string[] {
  const file = path.join(agentDir, IGNORE_FILE);
  let text = '';
  try {
    text = readRegularFile(file, 'utf8');
  } catch {
    if (create) {
      try {
        fs.writeFileSync(file, IGNORE_TEMPLATE, { flag: 'wx', mode: hiveModes().file });
      } catch {
        // another process wrote it first, or the folder is read-only: the defaults apply
      }
    }
  }
  return [...DEFAULT_IGNORE, ...text.split('\n'), ...extra];
}

/**
 * The files of an agent folder to mine, relative and sorted: memory.md first, then text
 * files the ignore list allows. Hidden names (temp files, locks) are never mined.
 */
export function listMinable(agentDir: string, lines: string[]): string[] {
  const ignored = compileIgnore(lines);
  const found: string[] = [];
  const walk = (rel: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(agentDir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || found.length >= MAX_FILES) continue;
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (depth < MAX_DEPTH && !ignored(child, true)) walk(child, depth + 1);
      } else if (e.isFile() && (child === 'memory.md' || (TEXT_FILE.test(e.name) && !ignored(child, false)))) {
        found.push(child);
      }
    }
  };
  walk('', 0);
  return found.sort((a, b) => (a === 'memory.md' ? -1 : b === 'memory.md' ? 1 : a.localeCompare(b)));
}
