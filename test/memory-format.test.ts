import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatEntry, parseMemory } from '../src/memory/format.ts';
import { remember, splitInput } from '../src/memory/remember.ts';
import { condenseText, planCondense } from '../src/memory/condense.ts';
import { extractiveSummarizer } from '../src/memory/summarizer.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { tempRoot } from './helpers/temp.ts';
import { bigMemory } from './helpers/memory.ts';
import { isHiveError } from '../src/errors.ts';

const SAMPLE = [
  '# Ann\n\n## Memories\n\n',
  '# Ann\n\nintro text\n\n## 2025-01-02 — Kickoff <!-- PINNED -->\n\nWe met.\n### sub heading\nmore\n\n## 2025-01-03 — Next\nno trailing newline',
  '# Ann\n\n## Pinned\n\nfree pinned text\n\n## 2025-01-01 — P <!-- PINNED -->\n\nx\n\n## Condensed\n\n### 2024-12 — 3 entries\n\n- a\n\n## Recent\n\n## 2025-02-01 — R\n\nr\n',
];

describe('memory.md format', () => {
  it('parses without losing a byte: header + blocks is the file again', () => {
    for (const text of SAMPLE) {
      const doc = parseMemory(text);
      expect(doc.header + doc.blocks.map((b) => b.raw).join('')).toBe(text);
    }
    const doc = parseMemory(SAMPLE[1]!);
    expect(doc.blocks.map((b) => [b.kind, b.date, b.title, b.pinned])).toEqual([
      ['entry', '2025-01-02', 'Kickoff', true],
      ['entry', '2025-01-03', 'Next', false],
    ]);
    const regions = parseMemory(SAMPLE[2]!).blocks.map((b) => `${b.kind}:${b.heading}:${b.pinned}`);
    expect(regions).toEqual(['region:Pinned:false', 'entry:2025-01-01 — P:true', 'region:Condensed:false', 'item:2024-12 — 3 entries:false', 'region:Recent:false', 'entry:2025-02-01 — R:false']);
  });

  it('entries: headings inside a body are demoted so they cannot split the file', () => {
    expect(formatEntry({ title: '## Sneaky\ttitle', body: '## not an entry\n# nor this\ntext  \n', date: '2025-01-01', pinned: true })).toBe(
      '## 2025-01-01 — Sneaky title <!-- PINNED -->\n\n### not an entry\n### nor this\ntext\n',
    );
    expect(splitInput('Title line\nbody line')).toEqual({ title: 'Title line', body: 'body line' });
    expect(splitInput({ title: 'T', body: 'B' })).toEqual({ title: 'T', body: 'B' });
    expect(splitInput('x'.repeat(200)).title.length).toBeLessThanOrEqual(81);
    for (const bad of ['', '   ', { title: '' }, 42, { title: 't', body: 7 }]) {
      let error: unknown = null;
      try {
        splitInput(bad as never);
      } catch (e) {
        error = e;
      }
      expect(isHiveError(error, 'E_BAD_ARGS')).toBe(true);
    }
  });

  it('free text under ## Pinned stays pinned through a condense', async () => {
    const text = `# Ann\n\n## Pinned\n\nNever delete the prod bucket.\n\n## Recent\n\n${bigMemory('Ann', 30).split('## Memories\n\n')[1]}`;
    const r = await condenseText(text, { keepRecent: 3, targetBytes: 4_000 }, extractiveSummarizer(), 'ann', 'extractive');
    expect(r.text).toContain('## Pinned\n\nNever delete the prod bucket.\n\n## Condensed');
    expect(planCondense(r.text!, 3).pinned.map((b) => b.raw.trim())).toEqual(['Never delete the prod bucket.']);
  });

  it('remember: concurrent appends in one process all land once, in full, with blank lines between', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'ann', name: 'Ann' });
    fs.appendFileSync(agentPaths(root, 'ann').memory, 'a line without a newline');
    await Promise.all(Array.from({ length: 20 }, (_, i) => remember(root, 'ann', { title: `entry ${i}`, body: `body ${i}` }, { date: '2025-05-05' })));
    const text = fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8');
    const entries = parseMemory(text).blocks.filter((b) => b.kind === 'entry');
    expect(entries.map((e) => e.title).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `entry ${i}`).sort());
    expect(text).toContain('a line without a newline\n\n## 2025-05-05 — entry');
    expect(text).not.toMatch(/\n\n\n/);
    await expect(remember(root, 'ann', 'x', { date: '2025-13-45' })).rejects.toMatchObject({ code: 'E_BAD_ARGS' });
    await expect(remember(root, 'nobody', 'x')).rejects.toMatchObject({ code: 'E_UNKNOWN_AGENT' });
    // A deleted memory.md comes back headed with the agent's name, as ensureAgent made it.
    fs.rmSync(agentPaths(root, 'ann').memory);
    await remember(root, 'ann', 'again', { date: '2025-05-06' });
    expect(fs.readFileSync(agentPaths(root, 'ann').memory, 'utf8')).toMatch(/^# Ann\n\n## Memories\n/);
  });
});
