import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workerEntry } from '../src/supervisor/bundle.ts';

/**
 * Every worker thread parses and runs what its entry imports statically before it can
 * start an actor; a hive of 10,000 agents pooled 100 per worker starts 100 of them at once.
 * Code a worker may never run (the NATS client outside cluster mode, zod's error messages
 * in 50 languages) belongs behind an import() or out of the bundle.
 */
function staticGraph(entry: string): { files: string[]; text: string } {
  const dir = path.dirname(entry);
  const seen = new Set<string>();
  const todo = [entry];
  let text = '';
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const code = fs.readFileSync(file, 'utf8');
    text += code;
    // Static imports and re-exports of sibling chunks; `import("./chunk-…")` is lazy and not followed.
    for (const m of code.matchAll(/^(?:import|export)\s[^;]*?from\s*"(\.\/[^"]+)"|^import\s*"(\.\/[^"]+)"/gms)) todo.push(path.join(dir, m[1] ?? m[2]!));
  }
  return { files: [...seen], text };
}

describe('worker bundles', () => {
  it.each(['agent-host', 'router-host'] as const)('%s loads neither every zod locale nor the NATS client at start', { timeout: 120_000 }, async (kind) => {
    const { files, text } = staticGraph(await workerEntry(kind));
    expect(files.length).toBeGreaterThan(1); // the walk follows the chunks
    expect(text).toContain('node_modules/xstate/'); // and sees what is there
    // `z.core.regexes` in src/protocol/message.ts once pulled zod's whole core namespace in (every locale, 600 KB).
    expect(text).not.toContain('node_modules/zod/v4/locales/he.js');
    expect(text).not.toContain('node_modules/@nats-io/');
  });
});
