import fs from 'node:fs';
import path from 'node:path';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { fsyncDir, listDir, writeFileAtomic } from '../fs/atomic.ts';
import { appendEvent } from '../log/event-log.ts';
import { HiveError } from '../errors.ts';
import { withFileLock } from './lock.ts';
import { condenseTask, condenseText, verifyCondensed, type CondenseResult, type CondenseSettings } from './condense.ts';
import { separatorAfter } from './format.ts';
import type { MemoryJobs } from './jobs.ts';
import type { Summarizer, SummarizerSpec } from './summarizer.ts';
import { makeDir } from '../fs/modes.ts';
import { assertRealDirectory, isRealDirectory, readRegularFile } from '../fs/regular-file.ts';
import { memoryKey, noteMirrored, withClusterFiles } from './cluster-memory.ts';
import type { FencedFiles } from '../queue/jetstream-files.ts';

/**
 * The reflector's disk work: condense one agent's memory.md without ever losing it.
 *
 *   1. snapshot S: read memory.md under its lock (an append is never half in S)
 *   2. back S up to backups/<stamp>/<id>/memory.md, durably (file and folders fsynced)
 *   3. condense S into O (piscina job, or the given summarizer function): no lock held,
 *      so `remember` keeps appending meanwhile
 *   4. verify O against S (pinned kept verbatim, recent byte-identical, smaller): abort
 *      on any problem, memory.md untouched
 *   5. under the lock: re-read C; C must start with S (anything else was rewritten by
 *      hand meanwhile: abort); the tail C[S.length:] holds the entries appended during
 *      3–4 and is carried over: F = O + tail. Write F to a temp file, fsync, rename over
 *      memory.md, fsync the folder.
 *
 * A crash (SIGKILL) before the rename in 5 leaves memory.md as it was, plus every
 * append (appends went to the real file); the temp file is swept at the next start.
 * After the rename, memory.md is F. Never torn, never missing an entry.
 */

export interface ReflectOptions {
  settings: CondenseSettings & { backupsKeep: number };
  /** A summarizer function (runs in this thread), or a spec run as a pool job. */
  summarizer: Summarizer | SummarizerSpec;
  /** Required for a spec summarizer; without it the job runs inline. */
  jobs?: MemoryJobs;
  /** @internal Test pauses at the dangerous moments. */
  hooks?: { afterBackup?: () => Promise<void>; beforeSwap?: () => Promise<void> };
  now?: () => Date;
}

export type ReflectResult =
  | { agent: string; status: 'condensed'; before: number; after: number; carried: number; backup: string; summarizer: string; fallback: string | null; condensed: number }
  | { agent: string; status: 'skipped' | 'aborted'; reason: string };

function stampOf(now: Date): string {
  return now.toISOString().replace(/[:.]/g, '-');
}

/** Writes the backup durably; returns its path. */
function backup(root: string, agent: string, data: Buffer, now: Date): string {
  const base = hivePaths(root).backups;
  // A symlink for backups/ (or a stamp folder) would put the backup, and later its pruning,
  // outside the hive: refused (E_NOT_REGULAR), and no condense goes ahead without a backup.
  assertRealDirectory(base, 'backups/');
  let stamp = stampOf(now);
  // lstat: a planted backups/<stamp> link is seen as taken (and checked below), never followed.
  for (let i = 1; fs.lstatSync(path.join(base, stamp, agent), { throwIfNoEntry: false }) !== undefined; i++) stamp = `${stampOf(now)}-${i}`;
  const dir = path.join(base, stamp, agent);
  assertRealDirectory(path.join(base, stamp), `backups/${stamp}`); // before the mkdir goes through it
  makeDir(dir);
  assertRealDirectory(dir, `backups/${stamp}/${agent}`);
  const file = path.join(dir, 'memory.md');
  writeFileAtomic(file, data);
  fsyncDir(path.join(base, stamp));
  fsyncDir(base);
  return file;
}

/** Keeps the newest `keep` backups of an agent. */
function pruneBackups(root: string, agent: string, keep: number): void {
  const base = hivePaths(root).backups;
  // Real folders only (lstat): removing through a symlinked backups/ or stamp would delete
  // folders outside the hive.
  if (!isRealDirectory(base)) return;
  const mine = listDir(base)
    .filter((s) => isRealDirectory(path.join(base, s)) && isRealDirectory(path.join(base, s, agent)))
    .sort();
  for (const stamp of mine.slice(0, Math.max(0, mine.length - keep))) {
    fs.rmSync(path.join(base, stamp, agent), { recursive: true, force: true });
    if (listDir(path.join(base, stamp)).length === 0) fs.rmSync(path.join(base, stamp), { recursive: true, force: true });
  }
}

async function condense(agent: string, text: string, options: ReflectOptions): Promise<CondenseResult> {
  const s = options.summarizer;
  if (typeof s === 'function') return condenseText(text, options.settings, s, agent, (s as { label?: string }).label ?? 'custom');
  const task = { agent, text, settings: { keepRecent: options.settings.keepRecent, targetBytes: options.settings.targetBytes }, summarizer: s };
  return options.jobs ? options.jobs.condense(task) : condenseTask(task);
}

/**
 * Condenses an agent's memory.md (see the file header for the steps and crash cases).
 * @example await condenseAgentMemory(root, 'alice', { settings: { keepRecent: 10, targetBytes: 32_768, backupsKeep: 5 }, summarizer: { kind: 'extractive' } })
 */
export async function condenseAgentMemory(root: string, agent: string, options: ReflectOptions): Promise<ReflectResult> {
  // Cluster mode: memory.md is the cluster's (src/memory/cluster-memory.ts), read and swapped there.
  const inCluster = await withClusterFiles(root, (files) => condenseMemory(root, agent, options, clusterMemoryFile(root, agent, files)));
  return inCluster.cluster ? inCluster.value : condenseMemory(root, agent, options, localMemoryFile(agentPaths(root, agent).memory));
}

/** Where condense reads memory.md and swaps in the condensed one: the folder, or the cluster. */
interface MemoryFile {
  readonly name: string;
  read(): Promise<Buffer | null>;
  /** Replaces what the last `read` returned (in the cluster: fails if it changed since). */
  replace(data: Buffer): Promise<void>;
}

function localMemoryFile(file: string): MemoryFile {
  return {
    name: file,
    read: async () => {
      try {
        return readRegularFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    replace: async (data) => writeFileAtomic(file, data),
  };
}

function clusterMemoryFile(root: string, agent: string, files: FencedFiles): MemoryFile {
  let revision = 0;
  return {
    name: `${memoryKey(agent)} (cluster)`,
    read: async () => {
      const v = await files.get(memoryKey(agent));
      revision = v?.revision ?? 0;
      return v?.data ?? null;
    },
    replace: async (data) => {
      revision = await files.put(memoryKey(agent), revision, data);
      // Mirrored at once: the file lock is held, so this writes the file itself.
      writeFileAtomic(agentPaths(root, agent).memory, data);
      noteMirrored(root, agent, data);
    },
  };
}

async function condenseMemory(root: string, agent: string, options: ReflectOptions, memory: MemoryFile): Promise<ReflectResult> {
  const file = agentPaths(root, agent).memory;
  const now = options.now?.() ?? new Date();
  const snapshot = await withFileLock(file, () => memory.read());
  if (!snapshot) return { agent, status: 'skipped', reason: 'no memory.md' };
  const text = snapshot.toString('utf8');
  const backupFile = backup(root, agent, snapshot, now);
  await options.hooks?.afterBackup?.();
  const result = await condense(agent, text, options);
  if (result.text === null) {
    dropBackup(backupFile);
    return { agent, status: 'skipped', reason: 'nothing old enough to condense' };
  }
  const condensed = result.text;
  const problems = verifyCondensed(text, condensed, options.settings.keepRecent);
  if (problems.length > 0) return abort(root, agent, `verification failed: ${problems.join('; ')}`, backupFile);
  const swapped = await withFileLock(file, async () => {
    const current = (await memory.read()) ?? Buffer.alloc(0);
    if (current.length < snapshot.length || !current.subarray(0, snapshot.length).equals(snapshot)) {
      return null;
    }
    const tail = current.subarray(snapshot.length).toString('utf8');
    // Appends were separated from S's last bytes; O ends with the same bytes unless S's
    // last block was pinned (moved up), in which case the separator is made again.
    const same = text.length > 0 && condensed.endsWith(text.slice(-Math.min(text.length, 64)));
    const final = tail === '' || same ? condensed + tail : condensed + separatorAfter(condensed) + tail.replace(/^\n+/, '');
    if (Buffer.byteLength(final) >= current.length) throw new HiveError('E_IO', `condensed ${memory.name} would not be smaller`);
    await options.hooks?.beforeSwap?.();
    await memory.replace(Buffer.from(final));
    return { carried: Buffer.byteLength(tail), after: Buffer.byteLength(final) };
  }).catch((err: unknown) => ({ error: String((err as Error).message ?? err) }));
  if (swapped === null) return abort(root, agent, 'memory.md was rewritten (not appended to) while condensing', backupFile);
  if ('error' in swapped) return abort(root, agent, swapped.error, backupFile);
  pruneBackups(root, agent, options.settings.backupsKeep);
  appendEvent(root, {
    type: 'memory.condensed',
    agent,
    before: result.before,
    after: swapped.after,
    carried: swapped.carried,
    condensed: result.condensed,
    summarizer: result.summarizer,
    ...(result.fallback ? { fallback: result.fallback } : {}),
    backup: path.relative(root, backupFile),
  });
  return {
    agent,
    status: 'condensed',
    before: result.before,
    after: swapped.after,
    carried: swapped.carried,
    backup: backupFile,
    summarizer: result.summarizer,
    fallback: result.fallback,
    condensed: result.condensed,
  };
}

/**
 * An aborted (or empty) run leaves memory.md as it was, so its backup holds nothing the
 * file does not: it is removed, or aborted runs would push real backups out of the
 * `backupsKeep` slots.
 */
function abort(root: string, agent: string, reason: string, backupFile: string): ReflectResult {
  dropBackup(backupFile);
  appendEvent(root, { type: 'memory.condense-aborted', agent, reason });
  return { agent, status: 'aborted', reason };
}

function dropBackup(backupFile: string): void {
  const agentDir = path.dirname(backupFile);
  fs.rmSync(agentDir, { recursive: true, force: true });
  const stampDir = path.dirname(agentDir);
  if (listDir(stampDir).length === 0) fs.rmSync(stampDir, { recursive: true, force: true });
}
