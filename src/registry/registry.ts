import lockfile from 'proper-lockfile';
import { hivePaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import { lockFs } from '../lock/lock-fs.ts';

export type AgentStatus = 'active' | 'stopped' | 'archived' | 'failed';

/** One agent as recorded in `registry.json`. `brain` is validated by the config schema. */
export interface RegistryEntry {
  id: string;
  name: string;
  role: string;
  brain: unknown;
  status: AgentStatus;
  /** The agent's own turn deadline in ms, when it has one (see supervisor.turnTimeoutMs). */
  turnTimeoutMs?: number;
  /** Where the agent came from: the config file, or spawned at runtime. */
  origin: 'config' | 'runtime' | 'system';
  created_at: string;
  updated_at: string;
}

export interface Registry {
  version: 1;
  agents: Record<string, RegistryEntry>;
}

const EMPTY: Registry = { version: 1, agents: {} };

/** Reads `registry.json`; an empty registry when the file does not exist yet. */
export function readRegistry(root: string): Registry {
  const file = hivePaths(root).registry;
  let reg: Registry | undefined;
  try {
    reg = readJsonFile<Registry>(file);
  } catch (err) {
    throw new HiveError('E_IO', `Cannot read ${file}: ${(err as Error).message}. Fix or delete the file.`, { cause: err });
  }
  return reg ?? structuredClone(EMPTY);
}

/**
 * Read-modify-write of `registry.json` under its lock, written atomically.
 * @example await updateRegistry(root, (r) => { r.agents.bob!.status = 'archived'; });
 */
export async function updateRegistry<T>(root: string, change: (registry: Registry) => T): Promise<T> {
  const file = hivePaths(root).registry;
  // proper-lockfile keys its in-process lock table by the locked path: lock the registry
  // file itself, never the root (that key belongs to hive.lock).
  const release = await lockfile.lock(file, {
    fs: lockFs,
    lockfilePath: `${file}.lock`,
    stale: 5_000,
    retries: { retries: 200, minTimeout: 5, maxTimeout: 50 },
    realpath: false,
  });
  try {
    const registry = readRegistry(root);
    const result = change(registry);
    writeJsonAtomic(file, registry);
    return result;
  } finally {
    await release();
  }
}
