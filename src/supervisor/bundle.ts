import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { createRequire } from 'node:module';
import { writeFileAtomic } from '../fs/atomic.ts';
import { HiveError } from '../errors.ts';
import { cachedBuild, saveBuild } from './build-cache.mjs';
import { PACKAGE_NAME, cacheDir as hiveCacheDir, packageRoot, runningFromSource } from '../package-files.ts';

/**
 * Workers run compiled JavaScript: a worker that registers tsx's loader starts several
 * times slower and larger than a bundled entry (README, "Performance"). Each of Hive's own
 * entries (HIVE_ENTRIES) is one bundle, dependencies included (one file to parse instead of hundreds of ESM modules to
 * resolve). The package ships them prebuilt in `dist/workers/` (`npm run build`); a
 * checkout running its TypeScript builds them on first use into its cache, reused while
 * none of their inputs changed. A user's TypeScript module brain is bundled the same
 * way, into the per-user cache (never into the installed package).
 */

/** Hive's own entries that run as their own module: worker threads, a pool's task, a helper process, the telemetry SDK. */
export const HIVE_ENTRIES = {
  'agent-host': 'actors/agent-host.ts',
  'router-host': 'actors/router-host.ts',
  'miner-host': 'actors/miner-host.ts',
  'reflector-host': 'actors/reflector-host.ts',
  'pool-task': 'src/memory/pool-task.ts',
  'git-process': 'src/audit/git-process.ts',
  'telemetry-sdk': 'src/telemetry/sdk.ts',
} as const;

export type HiveEntry = keyof typeof HIVE_ENTRIES;

/** Worker hosts: split, so code reached only through import() loads when first used. */
export const SPLIT_ENTRIES: ReadonlySet<HiveEntry> = new Set(['agent-host', 'router-host', 'miner-host', 'reflector-host']);

/**
 * esbuild options of every Hive bundle (the build script uses them too). Bundled CommonJS
 * dependencies may call require(): the ESM bundle gets one.
 */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: "import { createRequire as __hiveCreateRequire } from 'node:module'; const require = __hiveCreateRequire(import.meta.url);" },
} as const;

function cacheDir(): string {
  const dir = hiveCacheDir();
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

const built = new Map<string, Promise<string>>();

/**
 * `split`: code reached only through `import()` goes to its own chunk files, loaded
 * when first used. Agent hosts start faster when the memory search (MiniSearch,
 * execa) that a brain may never call is not in their entry file.
 */
/**
 * Where a build's manifest is kept (build-cache.mjs). Keyed by the entry's path too: two
 * checkouts of Hive share the cache folder, and one must never run the other's build.
 */
function manifestOf(name: string, entry: string): string {
  const where = createHash('sha256').update(path.resolve(entry)).digest('hex').slice(0, 8);
  return path.join(cacheDir(), `${name}-${where}.manifest.json`);
}

async function bundle(entry: string, name: string, external: boolean, split = false, plugins: Plugin[] = []): Promise<string> {
  // A build from an earlier process is reused when none of its inputs changed: a supervisor
  // restart skips esbuild entirely.
  const cached = cachedBuild(manifestOf(name, entry));
  if (cached) return cached;
  let result;
  try {
    result = await build({
      ...BUNDLE_OPTIONS,
      metafile: true,
      entryPoints: [entry],
      ...(split ? { splitting: true, outdir: cacheDir(), entryNames: `${name}-[hash]`, chunkNames: 'chunk-[hash]', outExtension: { '.js': '.mjs' } } : {}),
      write: false,
      logLevel: 'silent',
      plugins,
      ...(external ? { packages: 'external' as const, banner: {} } : {}),
    });
  } catch (err) {
    throw new HiveError('E_WORKER', `Cannot compile ${entry}: ${(err as Error).message}`, { cause: err });
  }
  if (split) {
    // Names carry content hashes: an existing file already holds these bytes.
    for (const out of result.outputFiles) if (!fs.existsSync(out.path)) writeFileAtomic(out.path, out.contents, { durable: false });
    const main = result.outputFiles.find((o) => path.basename(o.path).startsWith(`${name}-`))!.path;
    saveBuild(manifestOf(name, entry), [main, ...result.outputFiles.map((o) => o.path).filter((o) => o !== main)], result.metafile, process.cwd());
    return main;
  }
  const code = result.outputFiles[0]!.contents;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const file = path.join(cacheDir(), `${name}-${hash}.mjs`);
  if (!fs.existsSync(file)) writeFileAtomic(file, code, { durable: false });
  saveBuild(manifestOf(name, entry), [file], result.metafile, process.cwd());
  return file;
}

/**
 * The compiled file of one of Hive's own entries (`agent-host`, `git-process`, ...): the
 * prebuilt one of the package, or, running from the checkout's sources, built once per
 * process (and reused across processes while its inputs are unchanged).
 */
export function compiledEntry(name: HiveEntry): Promise<string> {
  let p = built.get(`hive:${name}`);
  if (!p) {
    p = runningFromSource() ? bundle(path.join(packageRoot(), HIVE_ENTRIES[name]), name, false, SPLIT_ENTRIES.has(name)) : prebuilt(name);
    built.set(`hive:${name}`, p);
    p.catch(() => built.delete(`hive:${name}`));
  }
  return p;
}

async function prebuilt(name: HiveEntry): Promise<string> {
  const file = path.join(packageRoot(), 'dist', 'workers', `${name}.mjs`);
  if (!fs.existsSync(file)) throw new HiveError('E_WORKER', `${file} is missing: this copy of ${PACKAGE_NAME} was not built (npm run build)`);
  return file;
}

/** The compiled file of a worker host (agent-host, router-host, miner-host, reflector-host). */
export function workerEntry(kind: 'agent-host' | 'router-host' | 'miner-host' | 'reflector-host'): Promise<string> {
  return compiledEntry(kind);
}

/**
 * An importable URL for a module brain. `.js`/`.mjs` files are used as they are;
 * TypeScript is bundled (dependencies included, so it resolves from the cache folder).
 * A machine module (`sharedXstate`) keeps `xstate` out of its bundle: its imports point at
 * the copy its own folder resolves (the one the worker loads to run it), so the machine and
 * the actors it is run with come from one XState runtime.
 */
export async function moduleBrainUrl(file: string, options: { sharedXstate?: string } = {}): Promise<string> {
  if (!fs.existsSync(file)) throw new HiveError('E_BAD_CONFIG', `Brain module ${file} does not exist`);
  if (/\.(mjs|js|cjs)$/.test(file)) return pathToFileURL(file).href;
  const stat = fs.statSync(file);
  const key = `brain:${file}:${stat.mtimeMs}:${stat.size}:${options.sharedXstate ?? ''}`;
  let p = built.get(key);
  if (!p) {
    const id = createHash('sha256').update(`${file}:${options.sharedXstate ?? ''}`).digest('hex').slice(0, 8);
    p = bundle(file, `brain-${path.basename(file).replace(/\W+/g, '_')}-${id}`, false, false, options.sharedXstate ? [sharedXstate(file, options.sharedXstate)] : []);
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return pathToFileURL(await p).href;
}

/** Resolves `xstate` and `xstate/*` from the module's folder (else Hive's copy, `fallback`) and leaves them external. */
function sharedXstate(moduleFile: string, fallback: string): Plugin {
  return {
    name: 'hive-shared-xstate',
    setup(b) {
      b.onResolve({ filter: /^xstate(\/.*)?$/ }, (args) => {
        for (const from of [moduleFile, fallback]) {
          try {
            return { path: createRequire(from).resolve(args.path), external: true };
          } catch {
            // next
          }
        }
        return { errors: [{ text: `Cannot resolve ${args.path} from ${moduleFile}: install xstate in your project` }] };
      });
    },
  };
}
