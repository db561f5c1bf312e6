import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { labelledHive, mineSettings } from './helpers/memory.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { runMinePass } from '../src/memory/mine.ts';
import { inlineJobs } from '../src/memory/jobs.ts';
import { searchMemory } from '../src/memory/search.ts';
import { readManifest } from '../src/memory/palace.ts';
import { parseMemPalaceOutput, resolveMemPalace, type MemPalaceSettings } from '../src/memory/mempalace.ts';
import { remember } from '../src/memory/remember.ts';

const SOME = ['dba', 'finance', 'planner'];
const FAKE = path.join(FIXTURES, 'mempalace-fake.mjs');

function palaceSettings(overrides: Partial<MemPalaceSettings> = {}): MemPalaceSettings {
  return { enabled: true, command: FAKE, args: [], mineTimeoutMs: 10_000, searchTimeoutMs: 5_000, ...overrides };
}

function calls(root: string): string[][] {
  const file = path.join(root, 'palace', 'mempalace', 'calls.log');
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as string[]);
}

function logged(root: string, type: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(root, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.type === type);
}

describe('MemPalace', () => {
  it('mines each wing through the CLI and answers searches from it', async () => {
    const root = await labelledHive(SOME);
    await runMinePass(root, mineSettings({ mempalace: palaceSettings() }), inlineJobs());
    const manifest = readManifest(root)!;
    expect(manifest.mempalace?.file).toBe(FAKE);
    expect(Object.values(manifest.wings).every((w) => w.mempalace?.hash === w.hash)).toBe(true);
    const mines = calls(root).filter((c) => c[0] === 'mine');
    expect(mines).toContainEqual(['mine', path.join(root, 'palace', 'staging', 'dba'), '--wing', 'dba', '--agent', 'dba']);
    // the ignore list applies to MemPalace too: it mines a staged copy
    expect(fs.readdirSync(path.join(root, 'palace', 'staging', 'dba'))).toEqual(['memory.md']);

    const r = await searchMemory(root, 'PgBouncer connections', { limit: 3 });
    expect(r.source).toBe('mempalace');
    expect(r.matches[0]).toMatchObject({ agent: 'dba', heading: '2025-02-21 — Connection pool exhaustion', score: 1 });
    expect(calls(root).at(-1)).toEqual(['search', 'PgBouncer connections', '--results', '3']);
    const scoped = await searchMemory(root, 'Postgres', { agent: 'planner', limit: 2 });
    expect(calls(root).at(-1)).toEqual(['search', 'Postgres', '--results', '2', '--wing', 'planner']);
    expect(scoped.matches.length).toBeGreaterThan(0); // `every` over nothing would pass
    expect(scoped.matches.every((m) => m.agent === 'planner')).toBe(true);
    expect((await searchMemory(root, 'PgBouncer', { mempalace: false })).source).toBe('index');

    // only the wing that changed is mined again
    const before = calls(root).filter((c) => c[0] === 'mine').length;
    await remember(root, 'finance', 'Budget freeze until April');
    await runMinePass(root, mineSettings({ mempalace: palaceSettings() }), inlineJobs());
    const again = calls(root).filter((c) => c[0] === 'mine').slice(before);
    expect(again.map((c) => c[3])).toEqual(['finance']);
  });

  it('is found on PATH as `mempalace`', () => {
    const bin = tempDir();
    fs.symlinkSync(FAKE, path.join(bin, 'mempalace'));
    const found = resolveMemPalace({ ...palaceSettings(), command: undefined as never }, '/', { PATH: `/nonexistent:${bin}` });
    expect(found?.file).toBe(path.join(bin, 'mempalace'));
    expect(resolveMemPalace({ ...palaceSettings(), command: undefined as never }, '/', { PATH: '/nonexistent' })).toBeNull();
    expect(resolveMemPalace({ ...palaceSettings(), enabled: false }, '/', { PATH: bin })).toBeNull();
  });

  it('falls back to the built-in index when the CLI is missing', async () => {
    const root = await labelledHive(SOME);
    await runMinePass(root, mineSettings({ mempalace: palaceSettings({ command: path.join(tempDir(), 'no-such-mempalace') }) }), inlineJobs());
    expect(readManifest(root)!.mempalace).toBeNull();
    expect((await searchMemory(root, 'PgBouncer')).source).toBe('index');
  });

  it('falls back when mining fails (non-zero exit), and logs it', async () => {
    const root = await labelledHive(SOME);
    await runMinePass(root, mineSettings({ mempalace: palaceSettings({ args: ['--fake-mode', 'fail'] }) }), inlineJobs());
    const wing = readManifest(root)!.wings.dba!;
    expect(wing.mempalace).toMatchObject({ hash: null, error: expect.stringContaining('exited with code 2') });
    expect(logged(root, 'memory.mempalace-failed').length).toBeGreaterThan(0);
    const r = await searchMemory(root, 'PgBouncer');
    expect(r.source).toBe('index');
    expect(r.matches[0]!.agent).toBe('dba');
  });

  for (const mode of ['fail-search', 'garbage-search'] as const) {
    it(`falls back when search ${mode === 'fail-search' ? 'exits non-zero' : 'prints something else'}`, async () => {
      const root = await labelledHive(SOME);
      await runMinePass(root, mineSettings({ mempalace: palaceSettings({ args: ['--fake-mode', mode] }) }), inlineJobs());
      const r = await searchMemory(root, 'PgBouncer');
      expect(r.source).toBe('index');
      expect(r.matches[0]!.agent).toBe('dba');
      expect(logged(root, 'memory.mempalace-failed').at(-1)).toMatchObject({ op: 'search' });
    });
  }

  it('falls back when search hangs past its timeout', async () => {
    const root = await labelledHive(SOME);
    await runMinePass(root, mineSettings({ mempalace: palaceSettings({ args: ['--fake-mode', 'hang-search'], searchTimeoutMs: 400 }) }), inlineJobs());
    const started = Date.now();
    const r = await searchMemory(root, 'PgBouncer');
    expect(r.source).toBe('index');
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(logged(root, 'memory.mempalace-failed').at(-1)!.error).toContain('did not finish in time');
  });

  it('parses MemPalace output: cosine, bm25-only and empty answers', () => {
    const out = [
      '============================================================',
      '  Results for: "x"',
      '============================================================',
      '',
      '  [1] alice / decisions',
      '      Source: /p/memory.md',
      '      Match:  cosine=0.812  bm25=2.1',
      '',
      '      ## 2026-01-02 — Chose Postgres <!-- PINNED -->',
      '      We picked Postgres for the queue metadata.',
      '',
      '  ────────────────────────────────────────────────────────',
      '  [2] bob / notes',
      '      Source: /p/notes.md',
      '      BM25:   3.5  (matched_via: drawer)',
      '',
      '      plain text without a heading',
      '',
    ].join('\n');
    expect(parseMemPalaceOutput(out, 'postgres')).toEqual([
      { agent: 'alice', heading: '2026-01-02 — Chose Postgres', excerpt: 'We picked Postgres for the queue metadata.', score: 0.812 },
      { agent: 'bob', heading: 'notes', excerpt: 'plain text without a heading', score: 3.5 },
    ]);
    expect(parseMemPalaceOutput('\n  No results found for: "x"\n', 'x')).toEqual([]);
    expect(() => parseMemPalaceOutput('segfault', 'x')).toThrow(/nothing recognisable/);
  });
});
