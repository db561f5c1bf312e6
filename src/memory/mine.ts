import fs from 'node:fs';
import { realSubfolders } from '../fs/regular-file.ts';
import path from 'node:path';
import { hivePaths, agentPaths } from '../layout/paths.ts';
import { sweepTempFiles } from '../fs/atomic.ts';
import { isAgentId } from '../protocol/agent-id.ts';
import { appendEvent } from '../log/event-log.ts';
import { errorMessage } from '../errors.ts';
import { ignoreLines, listMinable } from './ignore.ts';
import { withFileLock } from './lock.ts';
import { mempalaceMine, resolveMemPalace, stageFiles, type MemPalaceSettings } from './mempalace.ts';
import { emptyManifest, palacePaths, readManifest, readWingHash, removeWing, writeManifest, type PalaceManifest, type WingRecord } from './palace.ts';
import type { MemoryJobs } from './jobs.ts';

export interface MineSettings {
  /** Extra ignore patterns for every agent (beside each agent's `.mineignore`). */
  ignore: string[];
  mempalace: MemPalaceSettings;
  /** Rebuild `index.json` once wings newer than it hold this many bytes (and ≥ 10 % of all). */
  snapshotBytes: number;
  /** Folder a configured MemPalace path is relative to. */
  configDir: string;
}

export interface MineOptions {
  /** Re-mine every wing (and rebuild the snapshot), changed or not. */
  force?: boolean;
}

export interface MinePassResult {
  agents: number;
  /** Agents whose wing was rewritten. */
  mined: string[];
  removed: string[];
  documents: number;
  /** Bytes read and indexed by this pass. */
  bytes: number;
  snapshot: boolean;
  mempalace: { mined: string[]; failed: string[] };
  ms: number;
  generation: number;
}

function sameFiles(a: Record<string, [number, number]> | undefined, b: Record<string, [number, number]>): boolean {
  if (!a) return false;
  const keys = Object.keys(b);
  if (Object.keys(a).length !== keys.length) return false;
  return keys.every((k) => a[k] && a[k]![0] === b[k]![0] && a[k]![1] === b[k]![1]);
}

function statFiles(dir: string, files: string[]): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const f of files) {
    try {
      const st = fs.statSync(path.join(dir, f));
      out[f] = [st.mtimeMs, st.size];
    } catch {
      // vanished: the listing is re-done next pass
    }
  }
  return out;
}

function staleBytes(m: PalaceManifest): number {
  let n = 0;
  for (const [agent, w] of Object.entries(m.wings)) if (m.snapshot?.wings[agent] !== w.hash) n += w.bytes;
  return n;
}

/**
 * One mining pass over every agent (the miner actor's effect; `hive memory mine` runs
 * it directly). Under the palace lock, so two miners never interleave their manifest
 * writes. Only agents whose files changed (stat first, then hash) are re-mined, on the
 * job pool; MemPalace mines what changed since it last succeeded; the snapshot is
 * rebuilt when enough changed since the last one.
 * @example const r = await runMinePass(root, settings, inlineJobs()); r.mined // ['alice']
 */
export async function runMinePass(root: string, settings: MineSettings, jobs: MemoryJobs, options: MineOptions = {}): Promise<MinePassResult> {
  const started = performance.now();
  return withFileLock(palacePaths(root).mineLock, async () => {
    // Palace files are written only under this lock: a temp file now is a crashed write.
    for (const dir of [palacePaths(root).dir, palacePaths(root).wings]) sweepTempFiles(dir);
    const manifest = readManifest(root) ?? emptyManifest();
    // Real agent folders only: one that is a symlink would have files from outside the hive
    // mined into the palace, where every agent's memory search finds them.
    const agents = realSubfolders(hivePaths(root).agents)
      .filter((a) => isAgentId(a) && fs.existsSync(agentPaths(root, a).memory))
      .sort();
    const work: { agent: string; files: string[] }[] = [];
    for (const agent of agents) {
      const dir = agentPaths(root, agent).dir;
      const files = listMinable(dir, ignoreLines(dir, settings.ignore));
      const known = manifest.wings[agent];
      if (!options.force && known && sameFiles(known.files, statFiles(dir, files)) && readWingHash(root, agent) === known.hash) continue;
      work.push({ agent, files });
    }
    const results = await Promise.all(
      work.map((w) => jobs.mineWing({ root, agent: w.agent, files: w.files, knownHash: options.force ? null : (manifest.wings[w.agent]?.hash ?? null) })),
    );
    const mined: string[] = [];
    let bytes = 0;
    const now = new Date().toISOString();
    for (const r of results) {
      const previous = manifest.wings[r.agent];
      bytes += r.bytes;
      if (r.written) mined.push(r.agent);
      const record: WingRecord = {
        hash: r.hash,
        bytes: r.bytes,
        docs: r.written ? r.docs : (previous?.docs ?? 0),
        files: r.files,
        minedAt: r.written ? now : (previous?.minedAt ?? now),
        ...(previous?.mempalace ? { mempalace: previous.mempalace } : {}),
      };
      manifest.wings[r.agent] = record;
    }
    const removed = Object.keys(manifest.wings).filter((a) => !agents.includes(a));
    for (const a of removed) {
      delete manifest.wings[a];
      removeWing(root, a);
    }
    const mp = await mineMemPalace(root, settings, manifest, work, options.force === true);
    const changed = mined.length > 0 || removed.length > 0 || mp.mined.length > 0 || mp.failed.length > 0;
    if (changed) manifest.generation += 1;
    manifest.lastMineTime = now;
    writeManifest(root, manifest);
    let snapshot = false;
    // A searcher re-adds stale wings itself (cheap for a few), so the snapshot (costly
    // on a large palace) is rebuilt only once a tenth of the palace, or snapshotBytes, moved on.
    const totalBytes = Object.values(manifest.wings).reduce((n, w) => n + w.bytes, 0);
    if (totalBytes > 0 && (options.force || staleBytes(manifest) >= Math.max(settings.snapshotBytes, totalBytes / 10))) {
      const snap = await jobs.snapshot(root);
      manifest.snapshot = { wings: snap.wings, builtAt: snap.builtAt };
      writeManifest(root, manifest);
      snapshot = true;
    }
    const documents = Object.values(manifest.wings).reduce((n, w) => n + w.docs, 0);
    const result: MinePassResult = { agents: agents.length, mined, removed, documents, bytes, snapshot, mempalace: mp, ms: Math.round(performance.now() - started), generation: manifest.generation };
    if (changed || snapshot) {
      appendEvent(root, { type: 'memory.mined', agents: mined, removed, documents, bytes, snapshot, mempalace: mp, ms: result.ms });
    }
    return result;
  });
}

/** MemPalace mines each wing whose content it has not seen yet. */
async function mineMemPalace(root: string, settings: MineSettings, manifest: PalaceManifest, work: { agent: string; files: string[] }[], force: boolean) {
  const out = { mined: [] as string[], failed: [] as string[] };
  const cmd = resolveMemPalace(settings.mempalace, settings.configDir);
  manifest.mempalace = cmd;
  if (!cmd) return out;
  const files = new Map(work.map((w) => [w.agent, w.files]));
  const p = palacePaths(root);
  const todo = Object.entries(manifest.wings).filter(([agent, wing]) => {
    if (force) return true;
    if (wing.mempalace?.hash === wing.hash) return false;
    return !wing.mempalace?.error || files.has(agent); // failed on this content: retry once it changes
  });
  const mineOne = async ([agent, wing]: (typeof todo)[number]) => {
    const dir = agentPaths(root, agent).dir;
    const staged = path.join(p.staging, agent);
    try {
      stageFiles(dir, files.get(agent) ?? listMinable(dir, ignoreLines(dir, settings.ignore)), staged);
      await mempalaceMine(cmd, p.mempalace, staged, agent, settings.mempalace.mineTimeoutMs);
      wing.mempalace = { hash: wing.hash, error: null };
      out.mined.push(agent);
    } catch (err) {
      wing.mempalace = { hash: null, error: errorMessage(err) };
      out.failed.push(agent);
      appendEvent(root, { type: 'memory.mempalace-failed', op: 'mine', agent, error: errorMessage(err) });
    }
  };
  // Two at a time: MemPalace loads an embedding model per process; more would thrash.
  for (let i = 0; i < todo.length; i += 2) await Promise.all(todo.slice(i, i + 2).map(mineOne));
  return out;
}
