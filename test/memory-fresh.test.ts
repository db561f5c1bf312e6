// A memory search sees what was just remembered, before any miner indexed it: the index
// answers for what it holds and each memory.md changed since is searched as plain text.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';

describe('memory search sees fresh memory', () => {
  it('hive memory add, then hive memory search, finds the entry with no mining in between (and the index still answers for the rest)', async () => {
    const root = path.join(tempDir(), 'hive');
    expect((await runHive(['init', '--root', root])).code).toBe(0);
    for (const agent of ['ann', 'bob']) expect((await runHive(['spawn', '--root', root, '--id', agent, '--brain', 'echo'])).code).toBe(0);
    expect((await runHive(['memory', 'add', 'ann', 'Deploys go out on Tuesdays after the freeze', '--title', 'Deploy day', '--root', root])).code).toBe(0);
    expect((await runHive(['memory', 'add', 'bob', 'The rollback script lives in ops/rollback.sh', '--title', 'Rollback', '--root', root])).code).toBe(0);
    const mined = await runHive(['memory', 'mine', '--root', root]);
    expect(mined.code, mined.stderr).toBe(0);
    // Added after the mining pass: not in the index yet.
    expect((await runHive(['memory', 'add', 'ann', 'Zebra crossings need a second reviewer', '--title', 'Zebra rule', '--root', root])).code).toBe(0);
    const search = async (q: string, extra: string[] = []) => JSON.parse((await runHive(['memory', 'search', q, '--root', root, '--json', ...extra])).stdout) as { source: string; matches: { agent: string; heading: string }[]; unmined?: string[] };
    const zebra = await search('zebra reviewer');
    expect(zebra.matches.some((m) => m.agent === 'ann' && m.heading.includes('Zebra rule'))).toBe(true);
    expect(zebra.unmined).toEqual(['ann']);
    // bob's wing is unchanged: the index answers for it.
    const rollback = await search('rollback script');
    expect(rollback.matches[0]).toMatchObject({ agent: 'bob' });
    expect((await search('zebra', ['--agent', 'bob'])).matches).toEqual([]);
    // Mined again, the index holds it and nothing is unmined.
    expect((await runHive(['memory', 'mine', '--root', root])).code).toBe(0);
    const after = await search('zebra reviewer');
    expect(after.unmined).toBeUndefined();
    expect(after.matches.some((m) => m.heading.includes('Zebra rule'))).toBe(true);
  }, 60_000);
});
