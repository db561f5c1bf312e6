import fs from 'node:fs';
import path from 'node:path';
import { hivePaths } from '../layout/paths.ts';
import { readJsonFile, writeFileAtomic, writeJsonAtomic } from '../fs/atomic.ts';
import { makeDir } from '../fs/modes.ts';
import { openRegular } from '../fs/regular-file.ts';

/**
 * `palace/`, the miner's search index. It is a cache of the memory files: everything in
 * it can be rebuilt by mining again, so nothing here is fsynced (renames keep each file
 * whole; after a power cut a stale file is noticed by its hash and re-mined).
 *
 *   palace/manifest.json      what was mined: per wing the source hash, sizes, doc count
 *   palace/wings/<id>.json    one wing per agent: the sections of its files (the docs)
 *   palace/index.json         a MiniSearch snapshot of all wings + the wing hashes it holds
 *   palace/staging/<id>/      the files MemPalace mines (the ignore list applied)
 *   palace/mempalace/         MemPalace's own palace (`--palace`), when it is installed
 *
 * Readers load the snapshot and then re-add the wings whose hash moved on since, so a
 * re-mine of one agent costs one wing file, not a new snapshot of everything.
 */

export const PALACE_VERSION = 1;

/** One searchable section: an entry, a condensed item, or a section of a notes file. */
export interface MemoryDocument {
  /** `<agent>#<n>`, unique in the palace. */
  id: string;
  agent: string;
  file: string;
  heading: string;
  date: string | null;
  pinned: boolean;
  text: string;
}

export interface Wing {
  version: number;
  agent: string;
  /** sha256 (16 hex) of the mined files' names and bytes. */
  hash: string;
  docs: MemoryDocument[];
}

export interface WingRecord {
  hash: string;
  /** Bytes of the mined files. */
  bytes: number;
  docs: number;
  /** `file → [mtimeMs, size]` of each mined file: the cheap "changed?" test. */
  files: Record<string, [number, number]>;
  minedAt: string;
  /** The source hash MemPalace last mined successfully, and its last error. */
  mempalace?: { hash: string | null; error: string | null };
}

export interface PalaceManifest {
  version: number;
  /** Bumped by every pass that changed something (readers compare it). */
  generation: number;
  lastMineTime: string | null;
  /** The MemPalace command the miner used, so searchers elsewhere can use it too. */
  mempalace: { file: string; args: string[]; searchTimeoutMs: number } | null;
  wings: Record<string, WingRecord>;
  /** What `index.json` holds: the hash of each wing at the time it was built. */
  snapshot: { wings: Record<string, string>; builtAt: string } | null;
}

export function palacePaths(root: string) {
  const dir = hivePaths(root).palace;
  return {
    dir,
    manifest: path.join(dir, 'manifest.json'),
    index: path.join(dir, 'index.json'),
    wings: path.join(dir, 'wings'),
    staging: path.join(dir, 'staging'),
    mempalace: path.join(dir, 'mempalace'),
    mineLock: path.join(dir, 'mine'),
  };
}

export function wingFile(root: string, agent: string): string {
  return path.join(palacePaths(root).wings, `${agent}.json`);
}

export function emptyManifest(): PalaceManifest {
  return { version: PALACE_VERSION, generation: 0, lastMineTime: null, mempalace: null, wings: {}, snapshot: null };
}

/** The manifest, or null when nothing was mined yet (or it is unreadable: mine again). */
export function readManifest(root: string): PalaceManifest | null {
  try {
    const m = readJsonFile<PalaceManifest>(palacePaths(root).manifest);
    return m && m.version === PALACE_VERSION && typeof m.wings === 'object' ? m : null;
  } catch {
    return null;
  }
}

export function writeManifest(root: string, manifest: PalaceManifest): void {
  makeDir(palacePaths(root).dir);
  writeJsonAtomic(palacePaths(root).manifest, manifest, { durable: false });
}

export function readWing(root: string, agent: string): Wing | null {
  try {
    const w = readJsonFile<Wing>(wingFile(root, agent));
    return w && w.version === PALACE_VERSION && Array.isArray(w.docs) ? w : null;
  } catch {
    return null;
  }
}

/**
 * The source hash a wing file holds, read from its first bytes (the miner's "is the wing
 * still the one the manifest names?" check must not parse 100 wings of JSON per pass).
 */
export function readWingHash(root: string, agent: string): string | null {
  let fd: number;
  try {
    fd = openRegular(wingFile(root, agent)).fd;
  } catch {
    return null;
  }
  try {
    const head = Buffer.alloc(256);
    const n = fs.readSync(fd, head, 0, head.length, 0);
    return /"hash":"([0-9a-f]+)"/.exec(head.toString('utf8', 0, n))?.[1] ?? null;
  } finally {
    fs.closeSync(fd);
  }
}

export function writeWing(root: string, wing: Wing): void {
  // Key order matters: `hash` stays in the first bytes for readWingHash.
  const ordered: Wing = { version: wing.version, agent: wing.agent, hash: wing.hash, docs: wing.docs };
  makeDir(palacePaths(root).wings);
  writeFileAtomic(wingFile(root, wing.agent), JSON.stringify(ordered), { durable: false });
}

export function removeWing(root: string, agent: string): void {
  fs.rmSync(wingFile(root, agent), { force: true });
  fs.rmSync(path.join(palacePaths(root).staging, agent), { recursive: true, force: true });
}
