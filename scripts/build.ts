// npm run build: the package's dist/ (run by `prepare`, so a clone's `npm install`, a git
// dependency and `npm pack` always have it).
//   dist/src, dist/machines, dist/actors  JavaScript and .d.ts by tsc (rewriteRelativeImportExtensions):
//                                         the library a consumer imports, module for module
//   dist/workers/<entry>.mjs             Hive's own entries bundled by esbuild, dependencies
//                                         included: worker threads start from one file
//   dist/cli/main.mjs                    the `hive` command, bundled and split per command
// Why two tools: tsc writes the declarations and keeps the library readable; a bundle is
// what makes a worker thread or a CLI call start fast.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_OPTIONS, HIVE_ENTRIES } from '../src/supervisor/bundle.ts';
import { CLI_EXTERNALS } from '../src/supervisor/build-cache.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const t0 = performance.now();

fs.rmSync(DIST, { recursive: true, force: true });
execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
const tscMs = performance.now() - t0;

await build({
  ...BUNDLE_OPTIONS,
  absWorkingDir: ROOT,
  entryPoints: Object.fromEntries(Object.entries(HIVE_ENTRIES).map(([name, file]) => [name, path.join(ROOT, file)])),
  outdir: path.join(DIST, 'workers'),
  splitting: true,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
  logLevel: 'warning',
});

await build({
  ...BUNDLE_OPTIONS,
  absWorkingDir: ROOT,
  entryPoints: { main: path.join(ROOT, 'src', 'cli', 'main.ts') },
  outdir: path.join(DIST, 'cli'),
  splitting: true,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
  // Left to the consumer's node_modules (build-cache.mjs says which and why).
  external: CLI_EXTERNALS,
  logLevel: 'warning',
});

// Plain JavaScript beside the library (tsc emits only what it compiles).
for (const f of ['build-cache.mjs', 'build-cache.d.mts']) fs.copyFileSync(path.join(ROOT, 'src', 'supervisor', f), path.join(DIST, 'src', 'supervisor', f));
fs.cpSync(path.join(ROOT, 'src', 'inspector', 'static'), path.join(DIST, 'src', 'inspector', 'static'), { recursive: true });
process.stdout.write(`build: dist/ in ${Math.round(performance.now() - t0)} ms (tsc ${Math.round(tscMs)} ms)\n`);
