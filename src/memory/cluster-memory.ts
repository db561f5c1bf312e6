import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { appendEvent } from '../log/event-log.ts';
import { readClusterFile } from '../supervisor/cluster-file.ts';
import { HiveError, errorMessage } from '../errors.ts';
import { withFileLock } from './lock.ts';
import { countEntries } from './policy.ts';
import type { FencedFiles, FencedValue } from '../queue/jetstream-files.ts';

/**
 * memory.md in cluster mode (docs/architecture.md, "Cluster mode"): each agent's memory
 * lives in the cluster's KV (`memory.<agent>` in `<prefix>_files`), written with
 * compare-and-set (an append or a condense that raced another is made again on what is
 * there now), and every machine's folder holds a mirror that its router keeps up to date,
 * so the miner, `get_memory` and a person's `cat` read it on any machine. Write memory with
 * `hive memory add` or `hive.remember()`: an edit of the mirror by hand is overwritten by
 * the next write from the cluster.
 */

export function memoryKey(agent: string): string {
  return `memory.${agent.replaceAll('.', '=')}`;
}

function agentOfKey(key: string): string | null {
  const agent = key.startsWith('memory.') ? key.slice('memory.'.length).replaceAll('=', '.') : '';
  return isAgentId(agent) ? agent : null;
}

function readLocal(file: string): Buffer | null {
  try {
    return readRegularFile(file);
  } catch {
    return null;
  }
}

/**
 * Runs `fn` with the cluster's files when the folder is a machine of a cluster (its
 * `cluster.json`), and answers `{ cluster: false }` otherwise. The connection is closed after.
 */
export async function withClusterFiles<T>(root: string, fn: (files: FencedFiles) => Promise<T>): Promise<{ cluster: true; value: T } | { cluster: false }> {
  const cluster = readClusterFile(root);
  if (!cluster) return { cluster: false };
  const [{ openFencedFiles }, { isUnreachable }] = await Promise.all([import('../queue/jetstream-files.ts'), import('../queue/jetstream-transport.ts')]);
  const files = await openFencedFiles(cluster.servers, cluster.prefix);
  try {
    return { cluster: true, value: await fn(files) };
  } catch (err) {
    if (err instanceof HiveError || !isUnreachable(err)) throw err;
    throw new HiveError('E_UNAVAILABLE', `The cluster's NATS JetStream did not answer (${cluster.servers.join(', ')}): ${errorMessage(err)}; nothing was written`, { cause: err, details: { shortage: 'nats' } });
  } finally {
    await files.close();
  }
}

/** The digest of what the cluster last wrote into a mirror: a file that differs was changed here. */
function mirroredFile(root: string, agent: string): string {
  return path.join(agentPaths(root, agent).dir, '.memory.mirrored');
}

function digest(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Writes the mirror of `agent`'s memory.md when it differs (under the file's lock). A local
 * file the cluster did not write (a hive's memory from before cluster mode, an edit by
 * hand) and that holds entries is copied to `backups/mirror-<stamp>/<agent>/memory.md`
 * first (logged as `memory.mirror-kept-local`): replaced, never lost.
 */
export async function mirrorMemory(root: string, agent: string, data: Buffer): Promise<boolean> {
  const p = agentPaths(root, agent);
  if (!fs.existsSync(p.dir)) return false;
  return withFileLock(p.memory, () => {
    const local = readLocal(p.memory);
    if (local && local.equals(data)) return false;
    let mirrored: string | null = null;
    try {
      mirrored = readRegularFile(mirroredFile(root, agent), 'utf8').trim(); // a FIFO here never blocks the router
    } catch {
      mirrored = null;
    }
    if (local && countEntries(local.toString('utf8')) > 0 && digest(local) !== mirrored && !data.subarray(0, local.length).equals(local)) {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const dir = path.join(hivePaths(root).root, 'backups', `mirror-${stamp}`, agent);
      fs.mkdirSync(dir, { recursive: true });
      writeFileAtomic(path.join(dir, 'memory.md'), local);
      appendEvent(root, { type: 'memory.mirror-kept-local', agent, backup: path.relative(root, path.join(dir, 'memory.md')), bytes: local.length });
    }
    writeFileAtomic(p.memory, data);
    noteMirrored(root, agent, data);
    return true;
  });
}

/** Records that the folder's memory.md of `agent` is `data` as the cluster holds it (the file's lock held). */
export function noteMirrored(root: string, agent: string, data: Buffer): void {
  writeFileAtomic(mirroredFile(root, agent), `${digest(data)}\n`, { durable: false });
}

/**
 * Appends to an agent's memory in the cluster: `append(base)` answers the bytes to add to
 * what memory.md holds now (tried again on what is there when another writer came first).
 * The first write of an agent starts from its local memory.md. Returns the new contents,
 * already mirrored here.
 */
export async function appendClusterMemory(root: string, files: FencedFiles, agent: string, append: (base: Buffer) => Buffer): Promise<Buffer> {
  const p = agentPaths(root, agent);
  const key = memoryKey(agent);
  let built: { baseLength: number; added: Buffer } | null = null;
  // A write whose answer was lost is there when read again: found after the base it was built on.
  const done = (current: Buffer) => built !== null && current.indexOf(built.added, Math.max(0, built.baseLength - 1)) >= 0;
  const change = (current: Buffer | null) => {
    const base = current ?? readLocal(p.memory) ?? Buffer.alloc(0);
    const added = append(base);
    built = { baseLength: base.length, added };
    return Buffer.concat([base, added]);
  };
  const { whileStarting } = await import('../queue/jetstream-transport.ts');
  // A cluster electing a leader (a machine just died) answers for a while that it is not ready: tried again.
  const written = await whileStarting(async () => {
    const now = built ? await files.get(key) : null;
    return now && done(now.data) ? now : files.update(key, change, done);
  });
  const data = written!.data;
  await mirrorMemory(root, agent, data);
  return data;
}

/**
 * This machine's side of cluster memory, run by its router: agents whose memory.md here
 * holds entries and whose memory the cluster does not hold yet bring theirs (a hive that
 * was on one machine before; the first machine to bring one wins, the others' copies are
 * kept as backups when the mirror replaces them), then every write from anywhere is
 * mirrored into the folder. `onMirrored` hears of each. A cluster that does not answer
 * here is logged and tried again, never a reason for the router to fail.
 */
export async function startMemoryMirror(root: string, files: FencedFiles, agents: string[], onMirrored: (agent: string) => void, checkMs = MIRROR_CHECK_MS): Promise<() => void> {
  const { whileStarting } = await import('../queue/jetstream-transport.ts');
  for (const agent of agents) {
    const local = readLocal(agentPaths(root, agent).memory);
    if (!local || countEntries(local.toString('utf8')) === 0) continue;
    try {
      await whileStarting(async () => {
        if (await files.get(memoryKey(agent))) return;
        await files.put(memoryKey(agent), 0, local).catch((err: unknown) => {
          if ((err as { code?: string }).code !== 'E_CONFLICT') throw err; // another machine brought it first
        });
      });
    } catch (err) {
      appendEvent(root, { type: 'memory.seed-failed', agent, error: errorMessage(err) });
    }
  }
  const agentsDir = hivePaths(root).agents;
  let chain: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let stop: (() => void) | null = null;
  /** The newest revision of each agent's memory mirrored here. */
  const seen = new Map<string, number>();
  const mirror = (agent: string, value: FencedValue) => {
    if (!fs.existsSync(`${agentsDir}/${agent}`) || (seen.get(agent) ?? 0) >= value.revision) return;
    // One write at a time, in the order the cluster has them.
    chain = chain
      .then(async () => {
        if ((seen.get(agent) ?? 0) >= value.revision) return;
        const changed = await mirrorMemory(root, agent, value.data);
        seen.set(agent, value.revision);
        if (changed) onMirrored(agent);
      })
      .catch((err: unknown) => appendEvent(root, { type: 'memory.mirror-failed', agent, error: errorMessage(err) }));
  };
  // The watch is an ordered consumer that can stall without ending after the cluster lost
  // a machine (test:cluster saw two machines' mirrors miss a write for good): a look at
  // MIRROR_CHECK_SLICE agents' keys every MIRROR_CHECK_MS, in rotation, catches what it missed.
  let turn = 0;
  const check = setInterval(() => {
    const slice = agents.length <= MIRROR_CHECK_SLICE ? agents : Array.from({ length: MIRROR_CHECK_SLICE }, (_, i) => agents[(turn + i) % agents.length]!);
    turn = (turn + MIRROR_CHECK_SLICE) % Math.max(1, agents.length);
    for (const agent of slice) {
      void files.get(memoryKey(agent)).then(
        (value) => value && mirror(agent, value),
        () => undefined, // not answering now: the next look, or the watch
      );
    }
  }, checkMs);
  check.unref();
  const watch = async (): Promise<void> => {
    try {
      stop = await files.watch(
        'memory.',
        (key, value) => {
          const agent = agentOfKey(key);
          if (agent) mirror(agent, value);
        },
        (err) => {
          // The watch ended (the connection went away for good, a server error): watched again.
          appendEvent(root, { type: 'memory.mirror-failed', agent: '*', error: errorMessage(err) });
          if (!stopped) setTimeout(() => void watch(), 1_000).unref();
        },
      );
    } catch (err) {
      appendEvent(root, { type: 'memory.mirror-failed', agent: '*', error: errorMessage(err) });
      if (!stopped) setTimeout(() => void watch(), 1_000).unref();
    }
  };
  await watch();
  return () => {
    stopped = true;
    clearInterval(check);
    stop?.();
  };
}

const MIRROR_CHECK_MS = 5_000;
const MIRROR_CHECK_SLICE = 50;
