import fs from 'node:fs';
import { readRegularFile } from '../fs/regular-file.ts';
import path from 'node:path';
import { execa } from 'execa';
import { HiveError, errorMessage } from '../errors.ts';
import { excerptOf } from './excerpt.ts';
import type { MemoryMatch } from './search-index.ts';
import { makeDir } from '../fs/modes.ts';

/**
 * The MemPalace CLI (semantic search), used where it is installed. Its command line:
 *
 *   mempalace --palace <dir> mine <dir> --wing <agent> --agent <agent>
 *   mempalace --palace <dir> search <query> --results <n> [--wing <agent>]
 *
 * `--palace` keeps the palace inside the hive (`palace/mempalace/`), never the user's
 * default one. Every call has a timeout; a missing, failing or hanging CLI makes the
 * caller fall back to the built-in index, so MemPalace can only add to search quality.
 */

export interface MemPalaceSettings {
  enabled: boolean;
  /** A command name or path; default: `mempalace` on PATH. */
  command?: string | undefined;
  /** Arguments before ours (e.g. a script for `node`). */
  args: string[];
  mineTimeoutMs: number;
  searchTimeoutMs: number;
}

export interface MemPalaceCommand {
  file: string;
  args: string[];
  searchTimeoutMs: number;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** `name` on PATH, or null. */
export function which(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    if (isExecutable(file)) return file;
  }
  return null;
}

/**
 * The MemPalace command to use, or null when it is disabled or not installed.
 * A configured path is resolved against `cwd` (the config's folder).
 */
export function resolveMemPalace(settings: MemPalaceSettings, cwd: string, env: NodeJS.ProcessEnv = process.env): MemPalaceCommand | null {
  if (!settings.enabled) return null;
  const name = settings.command ?? 'mempalace';
  const file = name.includes('/') ? path.resolve(cwd, name) : which(name, env);
  if (!file || !isExecutable(file)) return null;
  return { file, args: settings.args, searchTimeoutMs: settings.searchTimeoutMs };
}

function failure(cmd: MemPalaceCommand, what: string, timeoutMs: number, err: unknown): HiveError {
  const e = err as { timedOut?: boolean; exitCode?: number; stderr?: string };
  if (e.timedOut) return new HiveError('E_TIMEOUT', `mempalace ${what} (${cmd.file}) did not finish in time (${timeoutMs} ms) and was killed`, { cause: err });
  const detail = e.exitCode !== undefined ? `exited with code ${e.exitCode}${e.stderr ? `: ${e.stderr.trim().slice(0, 300)}` : ''}` : errorMessage(err);
  return new HiveError('E_IO', `mempalace ${what} (${cmd.file}) failed: ${detail}`, { cause: err });
}

/** Mines one staged agent folder into wing `agent`. */
export async function mempalaceMine(cmd: MemPalaceCommand, palaceDir: string, dir: string, agent: string, timeoutMs: number): Promise<void> {
  makeDir(palaceDir);
  try {
    await execa(cmd.file, [...cmd.args, '--palace', palaceDir, 'mine', dir, '--wing', agent, '--agent', agent], {
      timeout: timeoutMs,
      forceKillAfterDelay: 1_000,
      stdin: 'ignore',
    });
  } catch (err) {
    throw failure(cmd, `mine of ${agent}`, timeoutMs, err);
  }
}

/** Semantic search; rejects (E_TIMEOUT / E_IO) when the CLI fails, hangs or prints nothing we understand. */
export async function mempalaceSearch(cmd: MemPalaceCommand, palaceDir: string, query: string, q: { agent?: string; limit: number }): Promise<MemoryMatch[]> {
  let stdout: string;
  try {
    const r = await execa(cmd.file, [...cmd.args, '--palace', palaceDir, 'search', query, '--results', String(q.limit), ...(q.agent ? ['--wing', q.agent] : [])], {
      timeout: cmd.searchTimeoutMs,
      forceKillAfterDelay: 1_000,
      stdin: 'ignore',
    });
    stdout = r.stdout;
  } catch (err) {
    throw failure(cmd, 'search', cmd.searchTimeoutMs, err);
  }
  return parseMemPalaceOutput(stdout, query).slice(0, q.limit);
}

const HIT = /^\s*\[(\d+)\]\s+(.+?)\s+\/\s+(.*?)\s*$/;
const SEPARATOR = /^\s*[─-]{10,}\s*$/;

/**
 * Parses `mempalace search` output: blocks of `[n] wing / room`, `Source:`,
 * `Match: 0.83` (or `cosine=0.83 bm25=…`, or `BM25: …`), then the text indented.
 */
export function parseMemPalaceOutput(stdout: string, query: string): MemoryMatch[] {
  const hits: { agent: string; room: string; score: number; lines: string[] }[] = [];
  let current: (typeof hits)[number] | null = null;
  for (const line of stdout.split('\n')) {
    const start = HIT.exec(line);
    if (start) {
      current = { agent: start[2]!, room: start[3]!, score: 0, lines: [] };
      hits.push(current);
      continue;
    }
    if (!current) continue;
    if (SEPARATOR.test(line)) {
      current = null;
      continue;
    }
    const meta = /^\s*(Source|Match|BM25):\s*(.*)$/.exec(line);
    if (meta && current.lines.length === 0) {
      if (meta[1] !== 'Source') current.score = Number(/(-?\d+(?:\.\d+)?)/.exec(meta[2]!)?.[1] ?? 0);
      continue;
    }
    current.lines.push(line.replace(/^ {6}/, ''));
  }
  if (hits.length === 0 && !/No results/i.test(stdout)) {
    throw new HiveError('E_IO', `mempalace search printed nothing recognisable: ${JSON.stringify(stdout.slice(0, 200))}`);
  }
  return hits.map((h) => {
    const text = h.lines.join('\n').trim();
    const headingLine = text.split('\n').find((l) => /^#{1,3}\s/.test(l));
    const heading = headingLine ? headingLine.replace(/^#+\s*/, '').replace('<!-- PINNED -->', '').trim() : h.room;
    const body = headingLine ? text.replace(headingLine, '').trim() : text;
    return { agent: h.agent, heading, excerpt: excerptOf(body, query), score: h.score };
  });
}

/** Mirrors an agent's minable files into `dir` (what MemPalace mines), removing others. */
export function stageFiles(agentDir: string, files: string[], dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  for (const rel of files) {
    const target = path.join(dir, rel);
    makeDir(path.dirname(target));
    try {
      // Read regular-only (a file swapped for a symlink or FIFO since the listing is skipped).
      fs.writeFileSync(target, readRegularFile(path.join(agentDir, rel)));
    } catch {
      // vanished or no longer a regular file since the listing: mined next pass
    }
  }
}
