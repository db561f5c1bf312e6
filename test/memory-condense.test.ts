import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bigMemory } from './helpers/memory.ts';
import { FIXTURES, collectLines, startFixture } from './helpers/fixture.ts';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { condenseAgentMemory, type ReflectOptions } from '../src/memory/reflect.ts';
import { planCondense, verifyCondensed } from '../src/memory/condense.ts';
import { parseMemory } from '../src/memory/format.ts';
import { remember } from '../src/memory/remember.ts';
import { countEntries, needsCondense } from '../src/memory/policy.ts';
import { createPoolJobs } from '../src/memory/pool.ts';

const SETTINGS = { keepRecent: 5, targetBytes: 8_192, backupsKeep: 3 };

async function hiveWith(memory: string, agent = 'ann'): Promise<{ root: string; file: string }> {
  const root = tempRoot();
  await ensureHive(root);
  await ensureAgent(root, { id: agent, name: 'Ann', brain: { kind: 'echo' } });
  const file = agentPaths(root, agent).memory;
  fs.writeFileSync(file, memory);
  return { root, file };
}

function options(extra: Partial<ReflectOptions> = {}): ReflectOptions {
  return { settings: SETTINGS, summarizer: { kind: 'extractive' }, ...extra };
}

/** The invariants of a condensed file against the original it came from. */
function expectCondensedFrom(original: string, after: string, keepRecent = SETTINGS.keepRecent): void {
  const plan = planCondense(original, keepRecent);
  for (const b of plan.pinned) expect(after).toContain(b.raw.trimEnd());
  expect(after.endsWith(plan.recent.map((b) => b.raw).join(''))).toBe(true);
  expect(Buffer.byteLength(after)).toBeLessThan(Buffer.byteLength(original));
  const regions = parseMemory(after).blocks.filter((b) => b.kind === 'region').map((b) => b.heading);
  expect(regions).toEqual(['Pinned', 'Condensed', 'Recent']);
}

function logged(root: string, type: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(root, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.type === type);
}

describe('reflector: condensing memory.md', () => {
  it('thresholds: ≥ minBytes and (> maxBytes or > maxEntries)', () => {
    const t = { minBytes: 16_384, maxBytes: 65_536, maxEntries: 50 };
    expect(needsCondense(70_000, 10, t)).toBe(true);
    expect(needsCondense(20_000, 51, t)).toBe(true);
    expect(needsCondense(20_000, 50, t)).toBe(false);
    expect(needsCondense(10_000, 500, t)).toBe(false);
    expect(countEntries(bigMemory('Ann', 12))).toBe(12);
  });

  it('condenses into Pinned / Condensed / Recent, backs up first, keeps every title, logs it', async () => {
    const original = bigMemory('Ann', 70, 9);
    const { root, file } = await hiveWith(original);
    const r = await condenseAgentMemory(root, 'ann', options());
    expect(r).toMatchObject({ status: 'condensed', summarizer: 'extractive', fallback: null, carried: 0 });
    const after = fs.readFileSync(file, 'utf8');
    expectCondensedFrom(original, after);
    expect(Buffer.byteLength(after)).toBeLessThan(Buffer.byteLength(original) / 2);
    for (const b of planCondense(original, SETTINGS.keepRecent).old) expect(after).toContain(b.title);
    expect(fs.readFileSync(r.status === 'condensed' ? r.backup : '', 'utf8')).toBe(original);
    expect(path.relative(root, r.status === 'condensed' ? r.backup : '')).toMatch(/^backups\/[^/]+\/ann\/memory\.md$/);
    expect(logged(root, 'memory.condensed')).toEqual([expect.objectContaining({ agent: 'ann', before: Buffer.byteLength(original), after: Buffer.byteLength(after) })]);
    expect(verifyCondensed(original, after, SETTINGS.keepRecent)).toEqual([]);
  });

  it('runs the condense on the piscina pool', async () => {
    const original = bigMemory('Ann', 60, 10);
    const { root, file } = await hiveWith(original);
    const jobs = createPoolJobs({ maxThreads: 1 });
    try {
      expect(await condenseAgentMemory(root, 'ann', options({ jobs }))).toMatchObject({ status: 'condensed' });
    } finally {
      await jobs.close();
    }
    expectCondensedFrom(original, fs.readFileSync(file, 'utf8'));
  }, 90_000);

  it('keeps entries appended while it was condensing (the tail is carried over)', async () => {
    const original = bigMemory('Ann', 60, 7);
    const { root, file } = await hiveWith(original);
    const appended: string[] = [];
    const r = await condenseAgentMemory(root, 'ann', options({
      hooks: {
        afterBackup: async () => {
          for (let i = 0; i < 3; i++) appended.push((await remember(root, 'ann', { title: `late ${i}`, body: `appended during the condense ${i}` }, { pinned: i === 1 })).text);
        },
      },
    }));
    expect(r).toMatchObject({ status: 'condensed' });
    const after = fs.readFileSync(file, 'utf8');
    const tail = appended.join('\n');
    expect(after.endsWith(tail)).toBe(true);
    expect(r.status === 'condensed' && r.carried).toBe(Buffer.byteLength(tail));
    expectCondensedFrom(original, after.slice(0, after.length - tail.length));
  });

  it('aborts and leaves memory.md untouched when it was rewritten meanwhile, or the result is not smaller', async () => {
    const { root, file } = await hiveWith(bigMemory('Ann', 60));
    const rewritten = '# Ann\n\nsomebody rewrote this by hand\n';
    const r = await condenseAgentMemory(root, 'ann', options({ hooks: { afterBackup: async () => fs.writeFileSync(file, rewritten) } }));
    expect(r).toMatchObject({ status: 'aborted', reason: expect.stringContaining('rewritten') });
    expect(fs.readFileSync(file, 'utf8')).toBe(rewritten);

    const tiny = '# Ann\n\n## 2025-01-01 — a\n\nx\n\n## 2025-01-02 — b\n\ny\n';
    fs.writeFileSync(file, tiny);
    const small = await condenseAgentMemory(root, 'ann', options({ settings: { ...SETTINGS, keepRecent: 1 } }));
    expect(small).toMatchObject({ status: 'aborted', reason: expect.stringContaining('not smaller') });
    expect(fs.readFileSync(file, 'utf8')).toBe(tiny);
    expect(logged(root, 'memory.condense-aborted')).toHaveLength(2);
  });

  it('uses a summarizer command (stdin → stdout) and falls back to extractive when it fails', async () => {
    const original = bigMemory('Ann', 60, 11);
    const { root, file } = await hiveWith(original);
    const command = { kind: 'command' as const, command: path.join(FIXTURES, 'summarizer.mjs'), args: [], timeoutMs: 10_000 };
    const r = await condenseAgentMemory(root, 'ann', options({ summarizer: command }));
    expect(r).toMatchObject({ status: 'condensed', summarizer: `command:${command.command}`, fallback: null });
    const after = fs.readFileSync(file, 'utf8');
    expect(after).toContain('Summary by the test summarizer for ann');
    expectCondensedFrom(original, after);

    for (const [arg, why] of [['--fail', 'exited with code 3'], ['--empty', 'printed nothing'], ['--bloat', 'not smaller']] as const) {
      fs.writeFileSync(file, original);
      const f = await condenseAgentMemory(root, 'ann', options({ summarizer: { ...command, args: [arg] } }));
      expect(f).toMatchObject({ status: 'condensed', summarizer: 'extractive', fallback: expect.stringContaining(why) });
      expectCondensedFrom(original, fs.readFileSync(file, 'utf8'));
    }
    const backups = fs.readdirSync(path.join(root, 'backups')).filter((s) => fs.existsSync(path.join(root, 'backups', s, 'ann')));
    expect(backups).toHaveLength(SETTINGS.backupsKeep);
  });
});

describe('reflector: SIGKILL in the middle of a condense', () => {
  async function killedAt(where: 'summarize' | 'swap') {
    const original = bigMemory('Ann', 60, 8);
    const { root, file } = await hiveWith(original);
    const child = startFixture('condense-process.ts', [root, 'ann', where]);
    const paused = new Promise<void>((resolve) => {
      collectLines(child, (l) => l === `paused ${where}` && resolve());
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, s) => resolve(s)));
    await paused;
    return { root, file, original, child, exited };
  }

  it('killed while summarizing: memory.md is the original plus every append', async () => {
    const { root, file, original, child, exited } = await killedAt('summarize');
    const a = await remember(root, 'ann', 'appended while the condenser ran');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const b = await remember(root, 'ann', 'appended after it died');
    expect(fs.readFileSync(file, 'utf8')).toBe(`${original}${a.text}\n${b.text}`);
    // the next condense succeeds and carries everything
    const r = await condenseAgentMemory(root, 'ann', options());
    expect(r).toMatchObject({ status: 'condensed' });
    expect(fs.readFileSync(file, 'utf8').endsWith(`${a.text}\n${b.text}`)).toBe(true);
  }, 90_000);

  it('killed holding the lock just before the swap: original kept, a waiting append gets the lock at once', async () => {
    const { root, file, original, child, exited } = await killedAt('swap');
    const waiting = remember(root, 'ann', 'appended while the swap held the lock');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const a = await waiting;
    expect(fs.readFileSync(file, 'utf8')).toBe(`${original}${a.text}`);
  }, 90_000);

  it('not killed: the condensed version wins and keeps the appends', async () => {
    const { root, file, original, child, exited } = await killedAt('summarize');
    const a = await remember(root, 'ann', 'appended while the condenser ran');
    child.stdin!.write('go\n');
    expect(await exited).toBeNull();
    const after = fs.readFileSync(file, 'utf8');
    expect(after.endsWith(a.text)).toBe(true);
    expectCondensedFrom(original, after.slice(0, after.length - a.text.length));
    expect(logged(root, 'memory.condensed')).toHaveLength(1);
  }, 90_000);
});
