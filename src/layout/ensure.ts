import fs from 'node:fs';
import path from 'node:path';
import { HiveError } from '../errors.ts';
import { agentPaths, hivePaths } from './paths.ts';
import { createFileOnce, fsyncDirAsync, writeFilesAtomic, writeFilesAtomicAsync, writeJsonAtomic, type FileToWrite } from '../fs/atomic.ts';
import { GOD_ID, SYSTEM_SENDER } from '../protocol/agent-id.ts';
import { updateRegistry, type RegistryEntry } from '../registry/registry.ts';
import { ensureHiveKey } from '../hooks/agent-token.ts';
import { makeDir } from '../fs/modes.ts';
import { readRegularFile } from '../fs/regular-file.ts';

export interface AgentSpec {
  id: string;
  name?: string;
  role?: string;
  /** The brain description (see the config schema); stored as given. */
  brain?: unknown;
  /** Its own turn deadline in ms (kept in the registry, so a spawned agent keeps it across restarts). */
  turnTimeoutMs?: number;
}

/** The brain of the god agent: people, answering through `hive answer` or the inspector. */
export const HUMAN_BRAIN = { kind: 'human' } as const;
/** The brain of the `hive` system agent: none; it only sends runtime notices. */
export const SYSTEM_BRAIN = { kind: 'external' } as const;

function identityText(spec: Required<Pick<AgentSpec, 'id' | 'name' | 'role'>> & { brain: unknown }): string {
  const kind = typeof spec.brain === 'object' && spec.brain !== null ? String((spec.brain as { kind?: unknown }).kind) : 'none';
  return [
    `# ${spec.name}`,
    '',
    `- id: ${spec.id}`,
    `- role: ${spec.role}`,
    `- brain: ${kind}`,
    '',
    'You are an agent in a hive. You receive messages in your inbox and answer by',
    'sending messages. Ask for human help by sending a message with needs_human.',
    '',
  ].join('\n');
}

/** The text of a new agent's `memory.md`. */
function memoryTemplate(name: string): string {
  return `# ${name}\n\n## Memories\n\n`;
}

/** The text of a new agent's `cursor.json` (what a missing one means too: nothing processed). */
const FRESH_CURSOR = `${JSON.stringify({ seq: 0 }, null, 2)}\n`;

/**
 * Creates the folders of one agent and lists the files it still needs: `identity.md`
 * when its text changed, `memory.md` and `cursor.json` when missing, empty or cut short.
 */
function agentFilesToWrite(root: string, spec: AgentSpec): { name: string; role: string; brain: unknown; dir: string; created: boolean; files: FileToWrite[] } {
  const p = agentPaths(root, spec.id);
  const name = spec.name ?? spec.id;
  const role = spec.role ?? 'agent';
  const brain = spec.brain ?? { kind: 'echo' };
  // A symlink (or anything but a folder) in the agent folder's place is not written through:
  // its files would land outside the hive. The supervisor refuses to start such an agent.
  if (fs.lstatSync(p.dir, { throwIfNoEntry: false })?.isDirectory() === false) return { name, role, brain, dir: p.dir, created: false, files: [] };
  const created = makeDir(p.dir);
  for (const dir of [p.outbox, p.sent, p.inbox, p.sessions]) makeDir(dir);
  const files: FileToWrite[] = [];
  // identity.md is rewritten on every call; when the text is the same, the file already is.
  const identity = identityText({ id: spec.id, name, role, brain });
  if (readOrNull(p.identity) !== identity) files.push({ name: path.basename(p.identity), data: identity });
  const memory = memoryTemplate(name);
  if (cutShortOf(p.memory, memory)) files.push({ name: path.basename(p.memory), data: memory });
  if (cutShortOf(p.cursor, FRESH_CURSOR)) files.push({ name: path.basename(p.cursor), data: FRESH_CURSOR });
  return { name, role, brain, dir: p.dir, created, files };
}

function readOrNull(file: string): string | null {
  try {
    return readRegularFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * True when `file` is missing, or holds a strict beginning of `text` (empty included):
 * what a power cut can leave of a write of `text` that was not flushed. A file with
 * anything else (an agent's memories, a cursor that moved) is never written over.
 */
function cutShortOf(file: string, text: string): boolean {
  let size: number;
  try {
    size = fs.lstatSync(file).size;
  } catch {
    return true;
  }
  if (size > Buffer.byteLength(text)) return false;
  const current = readOrNull(file);
  if (current === null) return true;
  // A size made durable before the data (delayed allocation) reads as zero bytes.
  const written = current.replace(/\0+$/, '');
  return written !== text && text.startsWith(written);
}

/**
 * Creates the folders and files of agents idempotently (docs/architecture.md, "On-disk layout") and records them in
 * `registry.json` with one locked write. `identity.md` always ends up with the current
 * text; `memory.md` and `cursor.json` are created when missing and never overwritten.
 *
 * The files and the agents' folders are flushed (see `ensureAgentsReporting` for the
 * start's config agents, whose files are not).
 * @example await ensureAgents(root, [{ id: 'alice', brain: { kind: 'echo' } }, { id: 'bob' }])
 */
export async function ensureAgents(root: string, specs: AgentSpec[], origin: RegistryEntry['origin'] = 'runtime'): Promise<RegistryEntry[]> {
  return (await ensureAgentsReporting(root, specs, origin)).entries;
}

/** Agents whose folders are flushed (or files written and flushed) at once. */
const ENSURE_WINDOW = 64;
/** Windows whose flushes may be in flight at once (each holds a descriptor per folder or file). */
const WINDOWS_IN_FLIGHT = 4;

/**
 * `ensureAgents`, also naming the agents whose folders this call made: nothing a crashed
 * process left can be in them, so the start's sweeps pass them by (`sweepOrphans`).
 *
 * `flushFiles: false` (the supervisor's start, for the config's agents, which every start
 * ensures again) writes the files without flushing them; their folders are flushed either
 * way, so what is made in them later (an inbox's first segment, a memory appended and
 * flushed) is under a name that survives a power cut. Agents made any other way (spawned,
 * `god`, `hive`) are not ensured at every start: their files are flushed.
 */
export async function ensureAgentsReporting(
  root: string,
  specs: AgentSpec[],
  origin: RegistryEntry['origin'] = 'runtime',
  options: { flushFiles?: boolean } = {},
): Promise<{ entries: RegistryEntry[]; created: Set<string> }> {
  const flushFiles = options.flushFiles ?? true;
  const files = specs.map((spec) => ({ spec, ...agentFilesToWrite(root, spec) }));
  const changed = files.filter((f) => f.created || f.files.length > 0);
  // Windows of flushes in flight while the next windows' files are written (the writes
  // are this thread's work, the flushes the disk's): at 10,000 agents the start waited
  // ~2.7 s for flushes one window after another.
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < changed.length; i += ENSURE_WINDOW) {
    const window = changed.slice(i, i + ENSURE_WINDOW);
    let flushed: Promise<unknown>;
    if (flushFiles) flushed = Promise.all(window.map((f) => (f.files.length > 0 ? writeFilesAtomicAsync(f.dir, f.files) : fsyncDirAsync(f.dir))));
    else {
      for (const f of window) if (f.files.length > 0) writeFilesAtomic(f.dir, f.files, { durable: false });
      flushed = Promise.all(window.map((f) => fsyncDirAsync(f.dir)));
    }
    flushed.catch(() => undefined); // awaited below: a failure is thrown there, not reported as unhandled
    inFlight.push(flushed);
    if (inFlight.length >= WINDOWS_IN_FLIGHT) await inFlight.shift();
  }
  await Promise.all(inFlight);
  const created = new Set(files.filter((f) => f.created).map((f) => f.spec.id));
  // The new folders' own names, in agents/.
  if (created.size > 0) await fsyncDirAsync(hivePaths(root).agents);
  const entries = await updateRegistry(root, (registry) => {
    const now = new Date().toISOString();
    return files.map(({ spec, name, role, brain }) => {
      const previous = registry.agents[spec.id];
      const entry: RegistryEntry = {
        id: spec.id,
        name,
        role,
        brain,
        status: previous?.status === 'archived' || previous?.status === 'failed' ? 'active' : (previous?.status ?? 'active'),
        origin: previous?.origin ?? origin,
        created_at: previous?.created_at ?? now,
        updated_at: now,
      };
      if (spec.turnTimeoutMs !== undefined) entry.turnTimeoutMs = spec.turnTimeoutMs;
      registry.agents[spec.id] = entry;
      return entry;
    });
  });
  return { entries, created };
}

/**
 * Creates the folders and files of one agent idempotently and records it in the registry.
 * @example await ensureAgent(root, { id: 'alice', name: 'Alice', role: 'planner', brain: { kind: 'echo' } })
 */
export async function ensureAgent(root: string, spec: AgentSpec, origin: RegistryEntry['origin'] = 'runtime'): Promise<RegistryEntry> {
  return (await ensureAgents(root, [spec], origin))[0]!;
}

/**
 * Creates a hive root idempotently: the shared folders, `registry.json`, `log.jsonl`,
 * `snapshots.json`, `sessions.json` and the `god` agent that stands for the people in the loop.
 * @example await ensureHive('/tmp/my-hive')
 */
export async function ensureHive(root: string): Promise<void> {
  const p = hivePaths(root);
  for (const dir of [p.root, p.agents, p.deadLetter, p.palace, p.backups]) makeDir(dir);
  // Made by a link, like the stores below: a dangling symlink named log.jsonl is not followed.
  createFileOnce(p.log, '');
  // The snapshot store and the archive of closed conversations, empty at first
  // (never written over one a lock-protected updater made meanwhile).
  createFileOnce(p.snapshots, `${JSON.stringify({ version: 1, snapshots: [] }, null, 2)}\n`);
  createFileOnce(p.sessions, `${JSON.stringify({ version: 1, sessions: [] }, null, 2)}\n`);
  if (!fs.existsSync(p.registry)) writeJsonAtomic(p.registry, { version: 1, agents: {} });
  ensureHiveKey(root);
  if (!fs.existsSync(agentPaths(root, GOD_ID).dir)) {
    await ensureAgent(root, { id: GOD_ID, name: 'God', role: 'the people in the loop', brain: HUMAN_BRAIN }, 'system');
  }
  if (!fs.existsSync(agentPaths(root, SYSTEM_SENDER).dir)) {
    await ensureAgent(root, { id: SYSTEM_SENDER, name: 'Hive', role: 'the runtime: notices about failures and dead letters', brain: SYSTEM_BRAIN }, 'system');
  }
}

/** True when `root` looks like a hive (has a registry and an agents folder). */
export function isHive(root: string): boolean {
  const p = hivePaths(root);
  return fs.existsSync(p.registry) && fs.existsSync(p.agents);
}

/** Throws E_NOT_A_HIVE naming the folder unless `root` is a hive. */
export function requireHive(root: string): void {
  if (!isHive(root)) throw new HiveError('E_NOT_A_HIVE', `${root} is not a hive (no registry.json and agents/); create one with \`hive init --root ${root}\``);
}

/** Throws E_UNKNOWN_AGENT unless `root` is a hive with an agent `agentId` (checked as an id first). */
export function requireAgent(root: string, agentId: string): void {
  requireHive(root);
  if (!fs.existsSync(agentPaths(root, agentId).dir)) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${agentId}" in ${root}`);
}
