import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { writeFileAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import { repoRoot } from '../repo-root.ts';

/**
 * Workers run compiled JavaScript. Measured on Node 20 (2 cores): a worker that
 * registers tsx's loader takes ~175 ms and ~28 MB to start; a bundled entry starts in
 * a fraction of that. So the supervisor bundles each worker entry, dependencies
 * included (one file to parse instead of hundreds of ESM modules to resolve), and each
 * TypeScript module brain, once per process into a content-addressed file; workers
 * import that file directly (DESIGN §1: "or run compiled JS").
 */

const REPO = repoRoot();

function cacheDir(): string {
  const inRepo = path.join(REPO, 'node_modules', '.cache', 'hive');
  const dir = fs.existsSync(path.join(REPO, 'node_modules')) ? inRepo : path.join(os.tmpdir(), `hive-cache-${process.getuid?.() ?? 0}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

const built = new Map<string, Promise<string>>();

/**
 * `split`: code reached only through `import()` goes to its own chunk files, loaded
 * when first used. Agent hosts start ~15 ms faster when the memory search (MiniSearch,
 * execa) that a brain may never call is not in their entry file.
 */
interface Manifest {
  /** Every output file of the build (entry first). */
  outputs: string[];
  /** Every input file with `mtimeMs:size` when it was built. */
  inputs: Record<string, string>;
}

function stamp(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.mtimeMs}:${st.size}`;
  } catch {
    return 'missing';
  }
}

/**
 * A build from an earlier process is reused when none of its inputs changed (a stat per
 * input file, a few ms): a supervisor restart skips esbuild entirely.
 */
function cachedBuild(name: string): string | null {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(cacheDir(), `${name}.manifest.json`), 'utf8')) as Manifest;
    if (!m.outputs.every((o) => fs.existsSync(o))) return null;
    for (const [file, s] of Object.entries(m.inputs)) if (stamp(file) !== s) return null;
    return m.outputs[0]!;
  } catch {
    return null;
  }
}

function saveManifest(name: string, outputs: string[], metafile: { inputs: Record<string, unknown> }): void {
  const inputs: Record<string, string> = {};
  for (const rel of Object.keys(metafile.inputs)) {
    const abs = path.resolve(process.cwd(), rel);
    inputs[abs] = stamp(abs);
  }
  writeFileAtomic(path.join(cacheDir(), `${name}.manifest.json`), JSON.stringify({ outputs, inputs } satisfies Manifest), { durable: false });
}

async function bundle(entry: string, name: string, external: boolean, split = false): Promise<string> {
  const cached = cachedBuild(name);
  if (cached) return cached;
  let result;
  try {
    result = await build({
      metafile: true,
      entryPoints: [entry],
      ...(split ? { splitting: true, outdir: cacheDir(), entryNames: `${name}-[hash]`, chunkNames: 'chunk-[hash]', outExtension: { '.js': '.mjs' } } : {}),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      logLevel: 'silent',
      ...(external
        ? { packages: 'external' as const }
        : {
            // Bundled CommonJS dependencies may call require(); give the ESM bundle one.
            banner: { js: "import { createRequire as __hiveCreateRequire } from 'node:module'; const require = __hiveCreateRequire(import.meta.url);" },
          }),
    });
  } catch (err) {
    throw new HiveError('E_WORKER', `Cannot compile ${entry}: ${(err as Error).message}`, { cause: err });
  }
  if (split) {
    // Names carry content hashes: an existing file already holds these bytes.
    for (const out of result.outputFiles) if (!fs.existsSync(out.path)) writeFileAtomic(out.path, out.contents, { durable: false });
    const main = result.outputFiles.find((o) => path.basename(o.path).startsWith(`${name}-`))!.path;
    saveManifest(name, [main, ...result.outputFiles.map((o) => o.path).filter((o) => o !== main)], result.metafile);
    return main;
  }
  const code = result.outputFiles[0]!.contents;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const file = path.join(cacheDir(), `${name}-${hash}.mjs`);
  if (!fs.existsSync(file)) writeFileAtomic(file, code, { durable: false });
  saveManifest(name, [file], result.metafile);
  return file;
}

/** Compiled file of a worker entry in `actors/` (e.g. `agent-host`), built once per process. */
export function workerEntry(kind: string): Promise<string> {
  const key = `actor:${kind}`;
  let p = built.get(key);
  if (!p) {
    // Dependencies bundled too: one file to parse instead of hundreds of modules to resolve.
    p = bundle(path.join(REPO, 'actors', `${kind}.ts`), kind, false, true);
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return p;
}

/**
 * Compiled file of a module run outside tsx (a repo-relative `.ts` path: a piscina task
 * module such as `src/memory/pool-task.ts`, a helper process such as
 * `src/audit/git-process.ts`), dependencies bundled, built once per process.
 */
export function compiledModule(relPath: string): Promise<string> {
  const key = `task:${relPath}`;
  let p = built.get(key);
  if (!p) {
    p = bundle(path.join(REPO, relPath), `task-${path.basename(relPath, '.ts')}`, false);
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return p;
}

/**
 * An importable URL for a module brain. `.js`/`.mjs` files are used as they are;
 * TypeScript is bundled (dependencies included, so it resolves from the cache folder).
 */
export async function moduleBrainUrl(file: string): Promise<string> {
  if (!fs.existsSync(file)) throw new HiveError('E_BAD_CONFIG', `Brain module ${file} does not exist`);
  if (/\.(mjs|js|cjs)$/.test(file)) return pathToFileURL(file).href;
  const stat = fs.statSync(file);
  const key = `brain:${file}:${stat.mtimeMs}:${stat.size}`;
  let p = built.get(key);
  if (!p) {
    const id = createHash('sha256').update(file).digest('hex').slice(0, 8);
    p = bundle(file, `brain-${path.basename(file).replace(/\W+/g, '_')}-${id}`, false);
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return pathToFileURL(await p).href;
}
