import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { CLI_EXTERNALS, cachedBuild, saveBuild } from '../../src/supervisor/build-cache.mjs';
import { BUNDLE_OPTIONS } from '../../src/supervisor/bundle.ts';

/**
 * The test fixtures (test/fixtures/*.ts, each a program a test runs as its own process) as
 * compiled JavaScript. Started through tsx's loader, a fixture took 2.3–2.4 s and 3.1 s of
 * CPU to print `ready` (crash-hive.ts: a hive of two agents); bundled, 1.1–1.3 s and 1.5 s.
 * The suite starts ~100 of them on 2 cores, so that was about a minute of it.
 *
 * `bundleFixtures` runs once before the suite (test/global-setup.ts) and builds each
 * fixture whose inputs changed (a manifest per fixture: src/supervisor/build-cache.mjs);
 * `bundledFixture` finds the build, or null (the caller then runs the TypeScript through
 * tsx, as before). The bundles live in `node_modules/.cache/hive/cli-…`; the fixtures and
 * src/package-files.ts keep their own `import.meta.url` (`ownUrl`), so a hive a fixture
 * starts finds its checkout and builds its workers from src/, exactly as under tsx.
 */

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = path.join(REPO, 'test', 'fixtures');
/** Keyed by the checkout: a worktree that links this one's node_modules (bench:ab) shares the cache folder. */
const KEY = createHash('sha256').update(REPO).digest('hex').slice(0, 8);
const OUT = path.join(REPO, 'node_modules', '.cache', 'hive', `cli-fixtures-${KEY}`);

const manifestOf = (name: string) => path.join(OUT, `${name}.manifest.json`);

/** The compiled `test/fixtures/<name>`, current with its sources; null when there is none. */
export function bundledFixture(name: string): string | null {
  return cachedBuild(manifestOf(name));
}

/**
 * The modules whose `import.meta.url` says where they are, as under tsx: a fixture finds
 * files beside it (brains, CLI scripts) from its own, and Hive finds its package root and
 * sees that it runs from source from src/package-files.ts's, not from the bundle's. (The
 * bundle's real path names another checkout where node_modules is a symlink to it, as in
 * bench:ab's worktrees: Node resolves the main module's symlinks.) Only these: elsewhere the
 * words stand in code that builds other bundles (src/supervisor/bundle.ts's banner).
 */
const OWN_URL = (rel: string) => rel.split(path.sep)[0] === 'test' || rel === path.join('src', 'package-files.ts');

const ownUrl: Plugin = {
  name: 'own-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (!OWN_URL(path.relative(REPO, args.path))) return undefined;
      return { contents: fs.readFileSync(args.path, 'utf8').replace(/\bimport\.meta\.url\b/g, JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
    });
  },
};

async function bundleOne(name: string): Promise<void> {
  const stem = name.replace(/\.ts$/, '');
  const result = await build({
    ...BUNDLE_OPTIONS,
    entryPoints: [path.join(FIXTURES, name)],
    outdir: OUT,
    entryNames: `${stem}-[hash]`,
    outExtension: { '.js': '.mjs' },
    // As the `hive` launcher's bundle.
    external: CLI_EXTERNALS,
    plugins: [ownUrl],
    write: false,
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: REPO,
  });
  fs.mkdirSync(OUT, { recursive: true });
  const out = result.outputFiles[0]!;
  if (!fs.existsSync(out.path)) {
    // Content-hashed names: another process writing the same build writes the same bytes.
    const tmp = `${out.path}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, out.contents);
    fs.renameSync(tmp, out.path);
  }
  saveBuild(manifestOf(name), [out.path], result.metafile, REPO);
  // Older builds of this fixture (a process that still runs one has it open).
  for (const file of fs.readdirSync(OUT)) {
    const old = path.join(OUT, file);
    if (old === out.path || !file.startsWith(`${stem}-`) || !file.endsWith('.mjs')) continue;
    try {
      if (Date.now() - fs.statSync(old).mtimeMs > 60_000) fs.rmSync(old, { force: true });
    } catch {
      // removed by another setup meanwhile
    }
  }
}

/**
 * Builds every fixture whose build is missing or older than its inputs; resolves with how
 * many it built. One that fails to build is reported on stderr and runs through tsx (its
 * test then says what is wrong with it), never stopping the suite.
 */
export async function bundleFixtures(): Promise<number> {
  const names = fs.readdirSync(FIXTURES).filter((n) => n.endsWith('.ts') && fs.statSync(path.join(FIXTURES, n)).isFile());
  const stale = names.filter((n) => bundledFixture(n) === null);
  const results = await Promise.allSettled(stale.map(bundleOne));
  results.forEach((r, i) => {
    if (r.status === 'rejected') process.stderr.write(`fixture-bundles: test/fixtures/${stale[i]} not compiled, it runs through tsx: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}\n`);
  });
  return results.filter((r) => r.status === 'fulfilled').length;
}
