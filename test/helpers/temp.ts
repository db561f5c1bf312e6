import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/** A fresh temp folder, removed after the test. */
export function tempDir(prefix = 'hive-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A path for a hive root that does not exist yet, inside a fresh temp folder. */
export function tempRoot(): string {
  return path.join(tempDir(), 'hive');
}

afterEach(() => {
  // A worker still winding down may write one last file while the folder goes (ENOTEMPTY, seen in CI): rm retries.
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});
