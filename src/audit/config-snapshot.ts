import path from 'node:path';
import { hivePaths } from '../layout/paths.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { readRegularFile } from '../fs/regular-file.ts';

/**
 * `config.json`: the effective configuration the hive was last started with, so the
 * audit trail shows configuration changes next to what they caused. Written only when
 * it changed. Returns true when it did.
 */
export function writeConfigSnapshot(root: string, config: object): boolean {
  const file = path.join(hivePaths(root).root, 'config.json');
  const text = `${JSON.stringify(config, (_k, v: unknown) => (typeof v === 'function' ? undefined : v), 2)}\n`;
  try {
    if (readRegularFile(file, 'utf8') === text) return false;
  } catch {
    // first time
  }
  writeFileAtomic(file, text, { durable: false });
  return true;
}
