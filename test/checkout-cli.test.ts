import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot, runningFromSource } from '../src/package-files.ts';

describe("a checkout's hive command", () => {
  it('runs the sources: its compiled CLI counts as running from source (workers are bundled from src/, not taken from a dist/ built at install)', () => {
    const repo = packageRoot();
    const run = spawnSync(process.execPath, [path.join(repo, 'bin', 'hive.mjs'), '--help'], { encoding: 'utf8', env: { ...process.env, HIVE_DEBUG: '1' } });
    expect(run.status).toBe(0);
    expect(run.stderr).not.toContain('compiled CLI unavailable');
    // Where scripts/hive.mjs compiled it: a folder of this checkout's own (a worktree that
    // links node_modules must not run another checkout's CLI).
    const key = createHash('sha256').update(repo).digest('hex').slice(0, 8);
    const out = path.join(repo, 'node_modules', '.cache', 'hive', `cli-${key}`);
    const entry = fs.readdirSync(out).find((f) => /^cli-[A-Z0-9]+\.mjs$/.test(f));
    expect(entry).toBeDefined();
    expect(runningFromSource(pathToFileURL(path.join(out, entry!)).href)).toBe(true);
    // The package's own bundles are not.
    expect(runningFromSource(pathToFileURL(path.join(repo, 'dist', 'cli', 'main.mjs')).href)).toBe(false);
    expect(runningFromSource('file:///home/u/app/node_modules/hive-runtime/dist/cli/main.mjs')).toBe(false);
  });
});
