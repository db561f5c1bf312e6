import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { HiveError } from '../errors.ts';
import { parseConfig, type HiveConfig } from './schema.ts';

/**
 * Loads and validates a config file (`.ts`, `.mts`, `.js`, `.mjs` or `.json`).
 * The default export (or the module itself) is the config.
 * @example const config = await loadConfig('hive.config.ts');
 */
export async function loadConfig(file: string): Promise<HiveConfig> {
  const abs = path.resolve(file);
  if (!fs.existsSync(abs)) throw new HiveError('E_BAD_CONFIG', `Config file ${abs} does not exist`);
  let value: unknown;
  try {
    if (abs.endsWith('.json')) value = JSON.parse(fs.readFileSync(abs, 'utf8'));
    else {
      value = await tsImport(pathToFileURL(abs).href, import.meta.url);
      // ESM gives { default }, a CommonJS-compiled file { default: { default } }: unwrap both.
      for (let i = 0; i < 2 && value && typeof value === 'object' && 'default' in value; i++) value = (value as { default: unknown }).default;
    }
  } catch (err) {
    throw new HiveError('E_BAD_CONFIG', `Cannot load config ${abs}: ${(err as Error).message}`, { cause: err });
  }
  return parseConfig(value, path.dirname(abs), abs);
}
