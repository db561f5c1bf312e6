import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null = null;

/**
 * The folder of Hive's own package (where `actors/` and `scripts/` live). Found by
 * walking up from this module, so it holds whether the code runs from `src/` or from a
 * compiled bundle in `node_modules/.cache/hive/`.
 */
export function repoRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && fs.existsSync(path.join(dir, 'actors'))) {
      try {
        if ((JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string }).name === 'hive') return (cached = dir);
      } catch {
        // keep walking
      }
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`Cannot find Hive's package folder above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}
