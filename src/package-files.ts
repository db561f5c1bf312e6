import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where Hive's own files are, whether it runs from its checkout (TypeScript in `src/`),
 * installed as a package (`node_modules/hive-runtime/dist/...`), or from a bundle of
 * either: every path is found from this module's own location, never from the current
 * folder or a folder's name.
 */

/** The npm name (the command is `hive`). */
export const PACKAGE_NAME = 'hive-runtime';

let root: string | null = null;
let version: string | null = null;

/** The folder of Hive's package.json: the nearest one above this module that names it. */
export function packageRoot(): string {
  if (root) return root;
  const here = fileURLToPath(import.meta.url);
  for (let dir = path.dirname(here); ; ) {
    const pkg = path.join(dir, 'package.json');
    try {
      const p = JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string; version?: string };
      if (p.name === PACKAGE_NAME) {
        version = p.version ?? '0.0.0';
        return (root = dir);
      }
    } catch {
      // no package.json here (or not ours): keep walking
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`Cannot find ${PACKAGE_NAME}'s package.json above ${here}`);
    dir = up;
  }
}

/** The version in Hive's package.json. */
export function packageVersion(): string {
  packageRoot();
  return version!;
}

/** Where scripts/hive.mjs puts the bundle of a checkout's CLI (`cli-<key>/`, inside the checkout). */
const CHECKOUT_CLI_BUNDLE = '/node_modules/.cache/hive/cli-';

/**
 * True when this code runs from the TypeScript sources (a checkout), not from `dist/`: the
 * `.ts` files themselves, or the bundle a checkout's `hive` command compiles them into
 * (scripts/hive.mjs writes it to node_modules/.cache/hive/cli-<key>/). That CLI once took the
 * workers from `dist/`, built at `npm install`: `npm start` ran agents and a router older
 * than the sources beside them.
 */
export function runningFromSource(url: string = import.meta.url): boolean {
  return url.endsWith('.ts') || url.includes(CHECKOUT_CLI_BUNDLE);
}


/**
 * A file of Hive's sources as it ships: `src/…` in a checkout, `dist/src/…` in the package
 * (where a `.ts` module is its compiled `.js`).
 */
export function shippedFile(relPath: string): string {
  if (runningFromSource()) return path.join(packageRoot(), relPath);
  return path.join(packageRoot(), 'dist', relPath.replace(/\.ts$/, '.js'));
}

/** The `hive` command's entry script. */
export function hiveBin(): string {
  return path.join(packageRoot(), 'bin', 'hive.mjs');
}

/**
 * A folder with an executable `hive` in it, for the PATH of provider processes (a CLI agent
 * told to run `hive memory search ...`). Written into the per-user cache, not the package
 * (a read-only install, and npm does not keep an execute bit on files that are not bins).
 */
export function providerBinDir(): string {
  const dir = path.join(cacheDir(), 'bin');
  const shim = path.join(dir, 'hive');
  const text = `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(hiveBin())} "$@"\n`;
  let current = '';
  try {
    current = fs.readFileSync(shim, 'utf8');
  } catch {
    current = '';
  }
  if (current !== text) {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${shim}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text, { mode: 0o755 });
    fs.renameSync(tmp, shim);
  }
  return dir;
}

/**
 * Where Hive caches what it compiles at run time (the user's TypeScript brains; in a
 * checkout, its own sources too): never inside the installed package, which may be
 * read-only. Per user and per version: `$XDG_CACHE_HOME/hive-runtime/<version>`, else
 * `~/.cache/...`, else the temp folder. A checkout keeps using `node_modules/.cache/hive`.
 */
export function cacheDir(): string {
  if (runningFromSource()) return path.join(packageRoot(), 'node_modules', '.cache', 'hive');
  const base = process.env.XDG_CACHE_HOME || (os.homedir() ? path.join(os.homedir(), '.cache') : path.join(os.tmpdir(), `hive-cache-${process.getuid?.() ?? 0}`));
  return path.join(base, PACKAGE_NAME, packageVersion());
}
