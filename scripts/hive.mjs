#!/usr/bin/env node
// The `hive` command. Runs from a checkout with no build step (`npx hive ...`):
// the CLI's TypeScript is compiled by esbuild into node_modules/.cache/hive/ and reused
// while none of its inputs changed (a stat per input), so a call starts in ~0.2 s
// instead of ~0.7 s through tsx's loader. tsx is still used for what users write in
// TypeScript (hive.config.ts, module brains), and is the fallback if compiling fails.
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = path.join(REPO, 'src', 'cli', 'main.ts');
const CACHE = path.join(REPO, 'node_modules', '.cache', 'hive');
// Keyed by the checkout: a worktree that links this one's node_modules (bench:ab) shares
// the cache folder, and must never run the other checkout's CLI.
const KEY = createHash('sha256').update(REPO).digest('hex').slice(0, 8);
const MANIFEST = path.join(CACHE, `cli-${KEY}.manifest.json`);
const OUT = path.join(CACHE, `cli-${KEY}`);
const { cachedBuild, saveBuild, CLI_EXTERNALS } = await import(pathToFileURL(path.join(REPO, 'src', 'supervisor', 'build-cache.mjs')).href);

async function compile() {
  const { build } = await import('esbuild');
  // Split: each command's code (and the packages only it imports) loads when it runs.
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    splitting: true,
    outdir: OUT,
    entryNames: 'cli-[hash]',
    chunkNames: 'cli-chunk-[hash]',
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Dependencies are bundled too (one file to parse beats resolving hundreds of ESM
    // modules: ~0.5 s at start), except those the package's CLI leaves outside.
    external: CLI_EXTERNALS,
    banner: { js: "import { createRequire as __hiveCreateRequire } from 'node:module'; const require = __hiveCreateRequire(import.meta.url);" },
    write: false,
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: REPO,
  });
  fs.mkdirSync(OUT, { recursive: true });
  for (const out of result.outputFiles) {
    if (fs.existsSync(out.path)) continue; // names carry content hashes
    const tmp = `${out.path}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, out.contents);
    fs.renameSync(tmp, out.path);
  }
  const entry = result.outputFiles.find((o) => path.basename(o.path).startsWith('cli-') && !path.basename(o.path).startsWith('cli-chunk-')).path;
  const outputs = [entry, ...result.outputFiles.map((o) => o.path).filter((p) => p !== entry)];
  // Chunks of older builds are not needed any more (a running CLI keeps its files open).
  const keep = new Set(outputs);
  for (const name of fs.readdirSync(OUT)) {
    const file = path.join(OUT, name);
    if (!keep.has(file) && Date.now() - fs.statSync(file).mtimeMs > 60_000) fs.rmSync(file, { force: true });
  }
  saveBuild(MANIFEST, outputs, result.metafile, REPO);
  return entry;
}

async function loadCli() {
  if (!fs.existsSync(path.join(REPO, 'node_modules'))) throw new Error('node_modules missing: run npm install');
  try {
    const file = cachedBuild(MANIFEST) ?? (await compile());
    return await import(pathToFileURL(file).href);
  } catch (err) {
    if (process.env.HIVE_DEBUG) process.stderr.write(`hive: compiled CLI unavailable (${err.message}); using tsx\n`);
    const { register } = await import('tsx/esm/api');
    register();
    return import(pathToFileURL(ENTRY).href);
  }
}

const { runCli, endProcess } = await loadCli();
endProcess(await runCli(process.argv.slice(2)));
