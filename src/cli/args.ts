import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { HiveError } from '../errors.ts';
import { AGENT_ID_PATTERN, isAgentId } from '../protocol/agent-id.ts';
import type { CliIO } from './io.ts';
import { adoptModesOf } from '../fs/modes.ts';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  name: string;
  summary: string;
  /** The usage line(s) shown on a usage error and in `hive help`. */
  usage: string;
  options: OptionSpec;
  /** Number of positional arguments accepted: [min, max]. */
  positionals?: [number, number];
  run(args: ParsedArgs, io: CliIO): Promise<number>;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

function usageError(command: Command, problem: string): HiveError {
  return new HiveError('E_BAD_ARGS', `hive ${command.name}: ${problem}\nusage: ${command.usage}`);
}

/** Parses argv for a command; unknown flags and missing values become E_BAD_ARGS naming them. */
export function parseCommandArgs(command: Command, argv: string[]): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: command.options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usageError(command, (err as Error).message.replace(/\. To specify a positional.*$/s, ''));
  }
  const [min, max] = command.positionals ?? [0, 0];
  if (parsed.positionals.length < min) throw usageError(command, `expected ${min} argument(s), got ${parsed.positionals.length}`);
  if (parsed.positionals.length > max) {
    throw usageError(command, `unexpected argument ${JSON.stringify(parsed.positionals[max])}`);
  }
  return { values: parsed.values as ParsedArgs['values'], positionals: parsed.positionals };
}

/** A string flag's value or undefined. */
export function str(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A positive integer flag, or E_BAD_ARGS naming the flag and the value. */
export function int(args: ParsedArgs, name: string, command: Command, fallback: number, min = 1): number {
  const v = str(args, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    throw usageError(command, `expected --${name} to be ${min === 1 ? 'a positive integer' : `an integer ≥ ${min}`}, got ${JSON.stringify(v)}`);
  }
  return n;
}

/** How the last command's root was chosen, for an error that says where it looked. */
export let rootChoice: { root: string; how: string } | null = null;

/** A hive folder: registry.json and agents/ (what `hive init` makes). */
function looksLikeHive(dir: string): boolean {
  return fs.existsSync(path.join(dir, 'registry.json')) && fs.existsSync(path.join(dir, 'agents'));
}

/**
 * The hive root a command works on, found as git finds a repository: `--root`, else
 * `$HIVE_ROOT`, else walking up from the current folder, the first folder that is a hive,
 * holds a `.hive` that is one, or holds a `hive.config.json` (its `root`); else `./.hive`.
 * `discover: false` (hive init) skips the walk. What the command creates there takes the
 * root's sharing (owner-only, or group-readable: src/fs/modes.ts).
 */
export function rootOf(args: ParsedArgs, io: CliIO, options: { discover?: boolean } = {}): string {
  const given = str(args, 'root');
  let root: string;
  let how: string;
  if (given !== undefined) [root, how] = [path.resolve(io.cwd, given), '--root'];
  else if (io.env.HIVE_ROOT) [root, how] = [path.resolve(io.cwd, io.env.HIVE_ROOT), '$HIVE_ROOT'];
  else {
    const found = options.discover === false ? null : discoverRoot(io.cwd);
    if (found) [root, how] = [found, `found from ${io.cwd}`];
    else [root, how] = [path.resolve(io.cwd, '.hive'), `no --root, no $HIVE_ROOT, and no hive in ${io.cwd} or a folder above it`];
  }
  rootChoice = { root, how };
  adoptModesOf(root);
  return root;
}

function discoverRoot(from: string): string | null {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    if (looksLikeHive(dir)) return dir;
    if (looksLikeHive(path.join(dir, '.hive'))) return path.join(dir, '.hive');
    const config = path.join(dir, 'hive.config.json');
    if (fs.existsSync(config)) {
      try {
        const root = (JSON.parse(fs.readFileSync(config, 'utf8')) as { root?: unknown }).root;
        if (typeof root === 'string') return path.resolve(dir, root);
      } catch {
        // not readable: keep walking
      }
    }
    if (path.dirname(dir) === dir) return null;
  }
}

export function badArgs(command: Command, problem: string): HiveError {
  return usageError(command, problem);
}

/** An agent id flag or positional (undefined stays undefined), or a usage error (exit 2) naming it. */
export function agentArg(command: Command, value: string, what?: string): string;
export function agentArg(command: Command, value: string | undefined, what?: string): string | undefined;
export function agentArg(command: Command, value: string | undefined, what = 'AGENT'): string | undefined {
  if (value !== undefined && !isAgentId(value)) {
    throw usageError(command, `expected ${what} to be an agent id (${AGENT_ID_PATTERN.source}), got ${JSON.stringify(value)}`);
  }
  return value;
}

export const ROOT_OPTION = { root: { type: 'string' } } as const satisfies OptionSpec;
export const JSON_OPTION = { json: { type: 'boolean' } } as const satisfies OptionSpec;

/**
 * `hive memory` / `hive dead-letter` without (or with an unknown) subcommand: a usage error
 * listing the family's subcommands (each is a command of its own, `<name> <sub>`).
 */
export function familyCommand(name: string, summary: string, subcommands: () => Command[]): Command {
  const subs = () => subcommands().map((c) => c.name.slice(name.length + 1));
  return {
    name,
    summary: `${summary}: ${subs().join(' | ')}`,
    usage: `hive ${name} ${subs().join('|')} ...`,
    options: {},
    positionals: [0, 1],
    async run(args) {
      const sub = args.positionals[0];
      throw badArgs(this, `${sub === undefined ? 'missing a subcommand' : `unknown subcommand ${JSON.stringify(sub)}`}; expected one of:\n${subcommands().map((c) => `  ${c.usage}`).join('\n')}`);
    },
  };
}
