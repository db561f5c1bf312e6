import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { HiveError } from '../errors.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { parseConfig, type HiveConfig } from './schema.ts';

/**
 * Loads and validates a config file (`.ts`, `.mts`, `.js`, `.mjs` or `.json`). The default
 * export (or the module itself) is the config.
 *
 * JavaScript is imported as it is. TypeScript is compiled by esbuild into a temporary ES
 * module beside the config (`.hive.config-<random>.mjs`, removed at once), its packages
 * left as imports: so `import { defineConfig } from 'hive-runtime'` resolves from the
 * user's own node_modules, as an ES module, in any project — also one whose package.json
 * says CommonJS, where a loader that compiles `.ts` to CommonJS could not import Hive.
 * @example const config = await loadConfig('hive.config.ts');
 */
export async function loadConfig(file: string): Promise<HiveConfig> {
  const abs = path.resolve(file);
  if (!fs.existsSync(abs)) throw new HiveError('E_BAD_CONFIG', `Config file ${abs} does not exist`);
  let value: unknown;
  try {
    if (abs.endsWith('.json')) value = JSON.parse(readRegularFile(abs, 'utf8'));
    else {
      value = /\.(c|m)?ts$/.test(abs) ? await importTypeScript(abs) : await import(pathToFileURL(abs).href);
      // ESM gives { default }, a CommonJS file { default: { default } }: unwrap both.
      for (let i = 0; i < 2 && value && typeof value === 'object' && 'default' in value; i++) value = (value as { default: unknown }).default;
    }
  } catch (err) {
    throw new HiveError('E_BAD_CONFIG', `Cannot load config ${abs}: ${(err as Error).message}`, { cause: err });
  }
  return parseConfig(value, path.dirname(abs), abs);
}

async function importTypeScript(file: string): Promise<unknown> {
  const { build } = await import('esbuild'); // only for TypeScript configs
  const out = path.join(path.dirname(file), `.hive.config-${randomBytes(6).toString('hex')}.mjs`);
  try {
    await build({ entryPoints: [file], outfile: out, bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20', logLevel: 'silent' });
    return await import(pathToFileURL(out).href);
  } finally {
    fs.rmSync(out, { force: true });
  }
}
