import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import MiniSearch from 'minisearch';
import { bigMemory, labelledHive, labelledQueries, mineSettings } from './helpers/memory.ts';
import { INDEX_OPTIONS, SEARCH_OPTIONS } from '../src/memory/index-options.ts';
import { topK } from '../src/memory/top-k.ts';
import type { MemoryDocument } from '../src/memory/palace.ts';
import { runMinePass } from '../src/memory/mine.ts';
import { inlineJobs } from '../src/memory/jobs.ts';
import { createPoolJobs } from '../src/memory/pool.ts';
import { searchMemory } from '../src/memory/search.ts';
import { readManifest, readWing } from '../src/memory/palace.ts';
import { remember } from '../src/memory/remember.ts';
import { agentPaths } from '../src/layout/paths.ts';

describe('memory search', () => {
  it('built-in index: recall@5 ≥ 0.8 on the labelled set', async () => {
    const root = await labelledHive();
    await runMinePass(root, mineSettings(), inlineJobs(), { force: true });
    const queries = labelledQueries();
    let found = 0;
    let first = 0;
    const misses: string[] = [];
    for (const q of queries) {
      const r = await searchMemory(root, q.query, { limit: 5 });
      expect(r.source).toBe('index');
      const rank = r.matches.findIndex((m) => m.agent === q.agent && m.heading === q.heading);
      if (rank === 0) first++;
      if (rank >= 0) found++;
      else misses.push(`${q.query} → ${r.matches.map((m) => `${m.agent}: ${m.heading}`).join(' | ')}`);
    }
    const recall = found / queries.length;
    console.log(`built-in index recall@5 = ${recall.toFixed(3)} (${found}/${queries.length}), recall@1 = ${(first / queries.length).toFixed(3)}${misses.length ? `\n  misses:\n  ${misses.join('\n  ')}` : ''}`);
    expect(recall).toBeGreaterThanOrEqual(0.8);
  });

  it('top-k ranking is exactly MiniSearch search(): same documents, same order, same scores', async () => {
    const root = await labelledHive();
    fs.writeFileSync(agentPaths(root, 'support').memory, bigMemory('Support', 60, 7));
    await runMinePass(root, mineSettings(), inlineJobs(), { force: true });
    const index = new MiniSearch<MemoryDocument>(INDEX_OPTIONS);
    for (const agent of Object.keys(readManifest(root)!.wings)) index.addAll(readWing(root, agent)!.docs);
    const vocabulary = [...new Set(readWing(root, 'support')!.docs.flatMap((d) => d.text.split(/\W+/)).concat(labelledQueries().flatMap((q) => q.query.split(' '))))];
    const queries = labelledQueries().map((q) => q.query);
    for (let i = 0; i < 150; i++) queries.push(Array.from({ length: 1 + (i % 4) }, (_, j) => vocabulary[(i * 31 + j * 17) % vocabulary.length]).join(' '));
    for (const q of queries) {
      const expected = index.search(q).slice(0, 5).map((r) => [r.id, r.score.toFixed(9)]);
      expect(topK(index, q, 5, SEARCH_OPTIONS).map((r) => [r.id, r.score.toFixed(9)]), q).toEqual(expected);
    }
    const scoped = topK(index, 'rollback', 5, SEARCH_OPTIONS, (f) => f.agent === 'finance').map((r) => r.id);
    expect(scoped).toEqual(index.search('rollback', { filter: (r) => r.agent === 'finance' }).slice(0, 5).map((r) => r.id));
  });

  it('falls back to plain text search when nothing was mined', async () => {
    const root = await labelledHive();
    const r = await searchMemory(root, 'PgBouncer transaction mode', { limit: 3 });
    expect(r.source).toBe('grep');
    expect(r.matches[0]).toMatchObject({ agent: 'dba', heading: '2025-02-21 — Connection pool exhaustion' });
    expect(r.matches[0]!.excerpt).toContain('PgBouncer');
    const scoped = await searchMemory(root, 'Postgres', { agent: 'planner' });
    expect(scoped.matches.map((m) => m.agent)).toEqual(['planner']);
  });

  it('re-mines only the files that changed, and searches see the change', async () => {
    const root = await labelledHive();
    const jobs = inlineJobs();
    const first = await runMinePass(root, mineSettings(), jobs, { force: true });
    expect(first.mined.length).toBeGreaterThanOrEqual(10);
    expect(first.snapshot).toBe(true);
    const again = await runMinePass(root, mineSettings(), jobs);
    expect(again.mined).toEqual([]);
    // touched but identical: hashed, not re-mined
    const file = agentPaths(root, 'dba').memory;
    fs.utimesSync(file, new Date(), new Date(Date.now() + 5_000));
    expect((await runMinePass(root, mineSettings(), jobs)).mined).toEqual([]);
    const wingBefore = fs.statSync(path.join(root, 'palace', 'wings', 'legal.json')).mtimeMs;
    await remember(root, 'dba', { title: 'Replica lag alarm', body: 'The zanzibar replica lagged 40 seconds behind the primary.' });
    const third = await runMinePass(root, mineSettings(), jobs);
    expect(third.mined).toEqual(['dba']);
    expect(third.snapshot).toBe(false);
    expect(fs.statSync(path.join(root, 'palace', 'wings', 'legal.json')).mtimeMs).toBe(wingBefore);
    const r = await searchMemory(root, 'zanzibar replica');
    expect(r.source).toBe('index');
    expect(r.matches[0]).toMatchObject({ agent: 'dba', heading: expect.stringContaining('Replica lag alarm') });
    expect(readManifest(root)!.snapshot!.wings.dba).not.toBe(readManifest(root)!.wings.dba!.hash);
  });

  it('a corrupt palace (torn manifest, garbage wing, torn index) is mined again whole, and searches find what they did before', async () => {
    const root = await labelledHive();
    const jobs = inlineJobs();
    await runMinePass(root, mineSettings(), jobs, { force: true });
    const before = await searchMemory(root, 'PgBouncer connections', { limit: 3 });
    const palace = path.join(root, 'palace');
    const manifest = fs.readFileSync(path.join(palace, 'manifest.json'), 'utf8');
    fs.writeFileSync(path.join(palace, 'manifest.json'), manifest.slice(0, Math.floor(manifest.length / 2)));
    fs.writeFileSync(path.join(palace, 'wings', 'dba.json'), 'not json at all');
    const index = fs.readFileSync(path.join(palace, 'index.json'), 'utf8');
    fs.writeFileSync(path.join(palace, 'index.json'), index.slice(0, 100));
    const again = await runMinePass(root, mineSettings(), jobs); // not forced: the damage alone makes it mine
    expect(again.mined).toEqual(expect.arrayContaining(['dba']));
    expect(readManifest(root)).not.toBeNull();
    expect(readWing(root, 'dba')?.docs.length).toBeGreaterThan(0);
    const after = await searchMemory(root, 'PgBouncer connections', { limit: 3 });
    expect(after.source).toBe('index');
    expect(after.matches.map((m) => [m.agent, m.heading])).toEqual(before.matches.map((m) => [m.agent, m.heading]));
  });

  it('respects the ignore list: notes are mined, ignored and non-memory files are not', async () => {
    const root = await labelledHive();
    const dir = agentPaths(root, 'support').dir;
    fs.writeFileSync(path.join(dir, 'notes.md'), '# Notes\n\n## Escalation\n\nCall the quokka hotline.\n');
    fs.writeFileSync(path.join(dir, 'secret.md'), '# Secret\n\nThe wombat password is hunter2.\n');
    fs.mkdirSync(path.join(dir, 'drafts'));
    fs.writeFileSync(path.join(dir, 'drafts', 'draft.md'), '# Draft\n\nplatypus plans\n');
    fs.writeFileSync(path.join(dir, 'inbox', 'stray.md'), 'narwhal in the inbox\n');
    fs.appendFileSync(path.join(dir, '.mineignore'), 'secret.md\ndrafts/\n');
    await runMinePass(root, mineSettings({ ignore: ['*.txt'] }), inlineJobs());
    fs.writeFileSync(path.join(dir, 'todo.txt'), 'axolotl\n');
    await runMinePass(root, mineSettings({ ignore: ['*.txt'] }), inlineJobs());
    const wing = readWing(root, 'support')!;
    const files = new Set(wing.docs.map((d) => d.file));
    expect([...files].sort()).toEqual(['memory.md', 'notes.md']);
    expect(readManifest(root)!.wings.god!.files).not.toHaveProperty('identity.md');
    for (const word of ['wombat', 'platypus', 'narwhal', 'axolotl']) {
      expect((await searchMemory(root, word)).matches).toEqual([]);
    }
    expect((await searchMemory(root, 'quokka hotline')).matches[0]).toMatchObject({ agent: 'support', heading: 'Escalation' });
  });

  it('runs the mining jobs on a piscina pool of compiled task files', async () => {
    const root = await labelledHive();
    const jobs = createPoolJobs({ maxThreads: 2 });
    try {
      const r = await runMinePass(root, mineSettings(), jobs, { force: true });
      expect(r.mined.length).toBeGreaterThanOrEqual(10);
      expect(r.snapshot).toBe(true);
    } finally {
      await jobs.close();
    }
    expect((await searchMemory(root, 'vacuum bloat outbox table')).matches[0]).toMatchObject({ agent: 'dba' });
  }, 90_000);
});
