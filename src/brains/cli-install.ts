import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { HiveError } from '../errors.ts';
import { entryKind } from '../fs/regular-file.ts';
import type { PresetName } from './presets.ts';

/**
 * The configuration an agent CLI reads from its working directory, written by Hive when a
 * preset agent starts: the hook entries that run `hive hook` and the MCP server entry that
 * runs `hive mcp`. Merged into what the user has there (their entries are kept, nothing of
 * theirs is rewritten but the file's formatting), and only Hive's own entries are removed
 * when the agent is archived. docs/architecture.md, "Agent CLIs".
 */

export interface InstallTarget {
  preset: PresetName;
  /** The CLI's working directory. */
  cwd: string;
  root: string;
  agentId: string;
  /** The `hive` program the entries run (an absolute path). */
  hive: string;
}

/** One entry Hive put in one file. */
export interface InstalledEntry {
  file: string;
  entry: string;
}

const CLAUDE_HOOKS = ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop', 'Notification'] as const;
const GEMINI_HOOKS = ['SessionStart', 'BeforeTool', 'AfterTool', 'AfterAgent', 'Notification'] as const;
const TOOL_EVENTS = new Set(['PreToolUse', 'PostToolUse', 'BeforeTool', 'AfterTool']);
const MCP_NAME = 'hive';
/** Claude Code's permission rule for every tool of the `hive` MCP server. */
const CLAUDE_ALLOW = 'mcp__hive';
const BLOCK_START = '# >>> hive-runtime: managed by Hive (removed when the agent is archived)';
const BLOCK_END = '# <<< hive-runtime';

type Json = Record<string, unknown>;

function readJson(file: string): Json {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Json;
  } catch (err) {
    throw new HiveError('E_BAD_CONFIG', `${file} is not valid JSON (${(err as Error).message}): Hive will not rewrite it; fix it or move it away`);
  }
  throw new HiveError('E_BAD_CONFIG', `${file} does not hold a JSON object: Hive will not rewrite it`);
}

/** Writes beside and renames over, keeping the file's mode: a reader never sees half a file. */
function writeKeepingMode(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let mode = 0o644;
  try {
    mode = fs.statSync(file).mode & 0o777;
  } catch {
    // new file
  }
  const tmp = `${file}.hive-${process.pid}-${threadId}-${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(tmp, text, { mode });
  fs.renameSync(tmp, file);
}

/** `"…/hive" hook --agent ID`: the agent's id in the command marks the entry as Hive's, for this agent. */
function hookCommand(t: InstallTarget): string {
  return `${JSON.stringify(t.hive)} hook --agent ${t.agentId}`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Hive's entries are known by what they run, not by the exact path of the program: the
 * `hive` a worker writes and the one the supervisor reads may live in different caches (an
 * upgrade moves it too).
 */
function ourHookPattern(t: InstallTarget): RegExp {
  return new RegExp(`(^|/)hive"? hook --agent ${escapeRegExp(t.agentId)}$`);
}

function mcpEntry(t: InstallTarget, tokenRef: string): Json {
  return { command: t.hive, args: ['mcp'], env: { HIVE_ROOT: t.root, AGENT_ID: t.agentId, HIVE_AGENT_TOKEN: tokenRef } };
}

function addTo(o: Json, key: string, value: string): void {
  const list = Array.isArray(o[key]) ? (o[key] as unknown[]) : [];
  if (!list.includes(value)) list.push(value);
  o[key] = list;
}

function removeFrom(o: Json, key: string, value: string): boolean {
  const list = o[key];
  if (!Array.isArray(list) || !list.includes(value)) return false;
  const kept = list.filter((v) => v !== value);
  if (kept.length === 0) delete o[key];
  else o[key] = kept;
  return true;
}

/** Hook entries (Claude Code's and Gemini CLI's shape): ours is the one whose command runs `hive hook --agent ID`. */
function isOurHook(group: unknown, ours: RegExp): boolean {
  return Array.isArray((group as { hooks?: unknown })?.hooks) && (group as { hooks: { command?: unknown }[] }).hooks.some((h) => typeof h.command === 'string' && ours.test(h.command));
}

function mergeHooks(settings: Json, events: readonly string[], t: InstallTarget, file: string): InstalledEntry[] {
  const hooks = (settings.hooks && typeof settings.hooks === 'object' ? settings.hooks : {}) as Record<string, unknown>;
  const out: InstalledEntry[] = [];
  const command = hookCommand(t);
  for (const event of events) {
    // Ours replaced (its program may have moved), theirs kept in their order.
    const list = (Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : []).filter((g) => !isOurHook(g, ourHookPattern(t)));
    list.push({ ...(TOOL_EVENTS.has(event) ? { matcher: '*' } : {}), hooks: [{ type: 'command', command }] });
    hooks[event] = list;
    out.push({ file, entry: `hooks.${event}` });
  }
  settings.hooks = hooks;
  return out;
}

function removeHooks(settings: Json, ours: RegExp): boolean {
  const hooks = settings.hooks as Record<string, unknown> | undefined;
  if (!hooks || typeof hooks !== 'object') return false;
  let changed = false;
  for (const [event, list] of Object.entries(hooks)) {
    if (!Array.isArray(list)) continue;
    // Only Hive's hook leaves a group; a user's hook added to the same group stays.
    const kept = list.flatMap((g) => {
      if (!isOurHook(g, ours)) return [g];
      changed = true;
      const left = (g as { hooks: { command?: unknown }[] }).hooks.filter((h) => !(typeof h.command === 'string' && ours.test(h.command)));
      return left.length > 0 ? [{ ...(g as Json), hooks: left }] : [];
    });
    if (kept.length === 0) delete hooks[event];
    else hooks[event] = kept;
  }
  if (Object.keys(hooks).length === 0) delete settings.hooks;
  return changed;
}

function isOurMcp(entry: unknown, t: InstallTarget): boolean {
  const e = entry as { command?: unknown; args?: unknown; env?: { AGENT_ID?: unknown } } | undefined;
  return typeof e?.command === 'string' && path.basename(e.command) === 'hive' && Array.isArray(e.args) && e.args[0] === 'mcp' && e.env?.AGENT_ID === t.agentId;
}

function mergeMcp(settings: Json, t: InstallTarget, tokenRef: string, file: string): InstalledEntry {
  const servers = (settings.mcpServers && typeof settings.mcpServers === 'object' ? settings.mcpServers : {}) as Record<string, unknown>;
  if (servers[MCP_NAME] !== undefined && !isOurMcp(servers[MCP_NAME], t)) {
    const other = (servers[MCP_NAME] as { env?: { AGENT_ID?: unknown } } | null)?.env?.AGENT_ID;
    throw new HiveError(
      'E_BAD_CONFIG',
      typeof other === 'string'
        ? `${file} already has Hive's MCP server for agent "${other}": two agents cannot share one working directory (${t.cwd}); give "${t.agentId}" a cwd of its own`
        : `${file} already has an MCP server named "${MCP_NAME}" that is not Hive's: Hive will not overwrite it; rename it and start the agent again`,
    );
  }
  servers[MCP_NAME] = mcpEntry(t, tokenRef);
  settings.mcpServers = servers;
  return { file, entry: `mcpServers.${MCP_NAME}` };
}

function removeMcp(settings: Json, t: InstallTarget): boolean {
  const servers = settings.mcpServers as Record<string, unknown> | undefined;
  if (!servers || !isOurMcp(servers[MCP_NAME], t)) return false;
  delete servers[MCP_NAME];
  if (Object.keys(servers).length === 0) delete settings.mcpServers;
  return true;
}

const toml = (s: string) => JSON.stringify(s); // a TOML basic string is a JSON string for these values

function codexBlock(t: InstallTarget): string {
  return [
    BLOCK_START,
    `[mcp_servers.${MCP_NAME}]`,
    `command = ${toml(t.hive)}`,
    'args = ["mcp"]',
    `env = { HIVE_ROOT = ${toml(t.root)}, AGENT_ID = ${toml(t.agentId)} }`,
    'env_vars = ["HIVE_AGENT_TOKEN"]',
    BLOCK_END,
  ].join('\n');
}

function withoutBlock(text: string): string {
  const start = text.indexOf(BLOCK_START);
  if (start < 0) return text;
  const end = text.indexOf(BLOCK_END, start);
  if (end < 0) return text; // its end marker edited away: what follows may be the user's, left alone
  const after = end + BLOCK_END.length;
  return `${text.slice(0, start).replace(/\n+$/, '\n')}${text.slice(after).replace(/^\n+/, '')}`.replace(/^\n$/, '');
}

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

/** How many entries `installedCliConfig` finds when all of Hive's are in place (its hooks and the MCP server). */
export function expectedEntryCount(preset: PresetName): number {
  return preset === 'claude' ? CLAUDE_HOOKS.length + 1 : preset === 'gemini' ? GEMINI_HOOKS.length + 1 : 1;
}

/** The files a preset's configuration lives in, under the CLI's working directory. */
export function configFiles(preset: PresetName, cwd: string): string[] {
  if (preset === 'claude') return [path.join(cwd, '.claude', 'settings.json'), path.join(cwd, '.mcp.json')];
  if (preset === 'codex') return [path.join(cwd, '.codex', 'config.toml')];
  return [path.join(cwd, '.gemini', 'settings.json')];
}

/**
 * Inside the hive (the default cwd is the agent folder) only through real folders to regular
 * files: a symlinked `.claude/` had Hive's hooks written into the user's settings outside it.
 */
function assertSafeInHive(root: string, file: string): void {
  const rel = path.relative(path.resolve(root), path.resolve(file));
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return;
  const parts = rel.split(path.sep);
  let at = path.resolve(root);
  for (let i = 0; i < parts.length; i++) {
    at = path.join(at, parts[i]!);
    const st = fs.lstatSync(at, { throwIfNoEntry: false });
    const last = i === parts.length - 1;
    if (!st || (last ? st.isFile() : st.isDirectory())) continue; // missing: made real by the write
    const kind = entryKind(st);
    throw new HiveError('E_NOT_REGULAR', `${path.relative(root, at)} is a ${kind}, not a ${last ? 'regular file' : 'folder'}: Hive does not write the CLI's configuration through it`, { details: { kind } });
  }
}

/** Writes (or refreshes) Hive's entries; returns what is installed where. Idempotent. */
export function installCliConfig(t: InstallTarget): InstalledEntry[] {
  for (const file of configFiles(t.preset, t.cwd)) assertSafeInHive(t.root, file);
  if (t.preset === 'claude') {
    const [settingsFile, mcpFile] = configFiles('claude', t.cwd) as [string, string];
    const settings = readJson(settingsFile);
    const hooks = mergeHooks(settings, CLAUDE_HOOKS, t, settingsFile);
    // `-p` asks no one: the project's `hive` server must be approved and its tools allowed.
    addTo(settings, 'enabledMcpjsonServers', MCP_NAME);
    addTo((settings.permissions ??= {}) as Json, 'allow', CLAUDE_ALLOW);
    const mcp = readJson(mcpFile);
    // Claude Code expands ${VAR} in .mcp.json: the token stays out of the working directory.
    const server = mergeMcp(mcp, t, '${HIVE_AGENT_TOKEN}', mcpFile);
    writeKeepingMode(settingsFile, `${JSON.stringify(settings, null, 2)}\n`);
    writeKeepingMode(mcpFile, `${JSON.stringify(mcp, null, 2)}\n`);
    return [...hooks, server, { file: settingsFile, entry: `enabledMcpjsonServers: ${MCP_NAME}` }, { file: settingsFile, entry: `permissions.allow: ${CLAUDE_ALLOW}` }];
  }
  if (t.preset === 'codex') {
    const [file] = configFiles('codex', t.cwd) as [string];
    const text = withoutBlock(readText(file));
    if (new RegExp(`^\\s*\\[mcp_servers\\.${MCP_NAME}\\]`, 'm').test(text)) {
      throw new HiveError('E_BAD_CONFIG', `${file} already has [mcp_servers.${MCP_NAME}] that is not Hive's: Hive will not overwrite it; rename it and start the agent again`);
    }
    writeKeepingMode(file, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${text ? '\n' : ''}${codexBlock(t)}\n`);
    return [{ file, entry: `[mcp_servers.${MCP_NAME}]` }];
  }
  const [file] = configFiles('gemini', t.cwd) as [string];
  const settings = readJson(file);
  const hooks = mergeHooks(settings, GEMINI_HOOKS, t, file);
  const server = mergeMcp(settings, t, '$HIVE_AGENT_TOKEN', file);
  writeKeepingMode(file, `${JSON.stringify(settings, null, 2)}\n`);
  return [...hooks, server];
}

/** Removes Hive's entries only (a file left empty by that is removed). Returns the files changed. */
export function uninstallCliConfig(t: InstallTarget): string[] {
  const changed: string[] = [];
  for (const file of configFiles(t.preset, t.cwd)) {
    assertSafeInHive(t.root, file);
    if (!fs.existsSync(file)) continue;
    if (file.endsWith('.toml')) {
      const text = readText(file);
      const left = withoutBlock(text);
      if (left === text) continue;
      if (left.trim() === '') fs.rmSync(file);
      else writeKeepingMode(file, left);
      changed.push(file);
      continue;
    }
    const settings = readJson(file);
    const a = removeHooks(settings, ourHookPattern(t));
    const b = removeMcp(settings, t);
    // Claude Code's approvals of Hive's server go with it (the settings file only; the same words of the user elsewhere stay).
    const c = t.preset === 'claude' && file.endsWith('settings.json') && removeFrom(settings, 'enabledMcpjsonServers', MCP_NAME);
    const d = t.preset === 'claude' && file.endsWith('settings.json') && settings.permissions && typeof settings.permissions === 'object' && removeFrom(settings.permissions as Json, 'allow', CLAUDE_ALLOW);
    if (settings.permissions && typeof settings.permissions === 'object' && Object.keys(settings.permissions).length === 0) delete settings.permissions;
    if (!a && !b && !c && !d) continue;
    if (Object.keys(settings).length === 0) fs.rmSync(file);
    else writeKeepingMode(file, `${JSON.stringify(settings, null, 2)}\n`);
    changed.push(file);
  }
  return changed;
}

/** What of Hive's configuration is in place now (for `hive doctor`). */
export function installedCliConfig(t: InstallTarget): InstalledEntry[] {
  const out: InstalledEntry[] = [];
  for (const file of configFiles(t.preset, t.cwd)) {
    if (!fs.existsSync(file)) continue;
    if (file.endsWith('.toml')) {
      if (readText(file).includes(BLOCK_START)) out.push({ file, entry: `[mcp_servers.${MCP_NAME}]` });
      continue;
    }
    let settings: Json;
    try {
      settings = readJson(file);
    } catch {
      continue;
    }
    for (const [event, list] of Object.entries((settings.hooks ?? {}) as Record<string, unknown>)) {
      if (Array.isArray(list) && list.some((g) => isOurHook(g, ourHookPattern(t)))) out.push({ file, entry: `hooks.${event}` });
    }
    if (isOurMcp((settings.mcpServers as Record<string, unknown> | undefined)?.[MCP_NAME], t)) out.push({ file, entry: `mcpServers.${MCP_NAME}` });
  }
  return out;
}
