// The cache of esbuild outputs shared by the checkout's `hive` launcher (scripts/hive.mjs,
// which runs before any TypeScript loader, hence plain JavaScript) and the worker bundles of
// src/supervisor/bundle.ts. A build is reused while none of its inputs changed: a manifest
// lists its outputs (entry first) and every input with `mtimeMs:size` when it was built, so
// checking it costs a stat per input.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Packages the CLI's bundles leave outside (the package's dist/cli, the checkout's `hive`
 * launcher, the test fixtures): what finds its own files at run time, what is big and used
 * by one command, and the compilers kept for the user's own TypeScript.
 */
export const CLI_EXTERNALS = ['piscina', 'esbuild', 'tsx', 'tsx/*', 'playwright-core', 'elkjs', 'elkjs/*', '@opentelemetry/*', 'chokidar', 'fsevents'];

/** `mtimeMs:size` of a file, or `missing`. */
export function stamp(file) {
  try {
    const st = fs.statSync(file);
    return `${st.mtimeMs}:${st.size}`;
  } catch {
    return 'missing';
  }
}

/** The entry file of the build `manifestFile` describes, or null when any input changed or an output is gone. */
export function cachedBuild(manifestFile) {
  try {
    const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    if (!m.outputs.every((o) => fs.existsSync(o))) return null;
    for (const [file, s] of Object.entries(m.inputs)) if (stamp(file) !== s) return null;
    return m.outputs[0] ?? null;
  } catch {
    return null;
  }
}

/**
 * Records a build: its outputs (entry first) and the inputs of esbuild's metafile, whose
 * paths are relative to `baseDir`. Replaced atomically, not flushed (a cache).
 */
export function saveBuild(manifestFile, outputs, metafile, baseDir) {
  const inputs = {};
  for (const rel of Object.keys(metafile.inputs)) {
    const abs = path.resolve(baseDir, rel);
    inputs[abs] = stamp(abs);
  }
  const tmp = `${manifestFile}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify({ outputs, inputs }));
  fs.renameSync(tmp, manifestFile);
}
