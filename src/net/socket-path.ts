import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { hivePaths } from '../layout/paths.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { writeFileAtomic } from '../fs/atomic.ts';

/** Unix socket paths are limited to ~107 bytes; deeper hive roots get a short path in tmp. */
const MAX_SOCKET_PATH = 100;

/**
 * Where the hive's socket `name` lives: `<root>/<name>` when short enough, otherwise
 * `<tmp>/hive-<hash>-<name>`, with `<root>/<name>.path` pointing at it.
 */
export function socketPathFor(root: string, name: string): string {
  const inRoot = path.join(hivePaths(root).root, name);
  if (inRoot.length <= MAX_SOCKET_PATH) return inRoot;
  const hash = createHash('sha256').update(hivePaths(root).root).digest('hex').slice(0, 12);
  return path.join(os.tmpdir(), `hive-${hash}-${name}`);
}

/** Records where a socket lives when it is not inside the root (read by clients). */
export function publishSocketPath(root: string, name: string, actual: string): void {
  const pointer = path.join(hivePaths(root).root, `${name}.path`);
  if (actual === path.join(hivePaths(root).root, name)) fs.rmSync(pointer, { force: true });
  else writeFileAtomic(pointer, actual, { durable: false }); // replaces a symlink in its place, never writes through it
}

/** The socket path a client should connect to. */
export function resolveSocketPath(root: string, name: string): string {
  try {
    return readRegularFile(path.join(hivePaths(root).root, `${name}.path`), 'utf8').trim();
  } catch {
    return socketPathFor(root, name);
  }
}
