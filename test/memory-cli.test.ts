import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { bigMemory, labelledHive } from './helpers/memory.ts';
import { FIXTURES, runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';

async function cli(args: string[], input = '') {
  const io = memoryIO(input);
  const code = await runCli(args, io.io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('hive memory CLI', () => {
  it('add: text, title/body, stdin, pinned, date', async () => {
    const root = await labelledHive(['dba']);
    expect((await cli(['memory', 'add', 'dba', 'Replicas lag on Mondays', '--root', root])).code).toBe(0);
    expect((await cli(['memory', 'add', 'dba', '--title', 'Pinned rule', '--body', 'Never drop tables.', '--pinned', '--date', '2025-04-01', '--root', root])).code).toBe(0);
    const piped = await cli(['memory', 'add', 'dba', '--body', '-', '--root', root, '--json'], 'From stdin\nwith a second line');
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ agent: 'dba', size: expect.any(Number) });
    const text = fs.readFileSync(agentPaths(root, 'dba').memory, 'utf8');
    expect(text).toMatch(/## \d{4}-\d{2}-\d{2} — Replicas lag on Mondays\n$/m);
    expect(text).toContain('## 2025-04-01 — Pinned rule <!-- PINNED -->\n\nNever drop tables.\n');
    expect(text).toMatch(/— From stdin\n\nwith a second line\n$/);
  });

  it('add: bad input is a usage error naming the flag (exit 2); an unknown agent exits 1', async () => {
    const root = await labelledHive(['dba']);
    const date = await cli(['memory', 'add', 'dba', 'x', '--date', '04/01/2025', '--root', root]);
    expect(date.code).toBe(2);
    expect(date.stderr).toContain('expected --date to be a date as YYYY-MM-DD');
    expect(date.stderr).toContain('usage: hive memory add');
    expect((await cli(['memory', 'add', 'dba', '--root', root])).stderr).toContain('missing the text');
    const flag = await cli(['memory', 'add', 'dba', 'x', '--pinnned', '--root', root]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("Unknown option '--pinnned'");
    expect((await cli(['memory', 'add', 'Bad/Id', 'x', '--root', root])).code).toBe(2);
    const unknown = await cli(['memory', 'add', 'nobody', 'x', '--root', root]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('[E_UNKNOWN_AGENT]');
  });

  it('search: plain text before mining, the index after; --agent, --limit, --json', async () => {
    const root = await labelledHive(['dba', 'finance', 'devops']);
    const before = await cli(['memory', 'search', 'PgBouncer', '--root', root]);
    expect(before).toMatchObject({ code: 0 });
    expect(before.stdout).toMatch(/^source: grep\n 1\. dba · 2025-02-21 — Connection pool exhaustion/);
    expect((await cli(['memory', 'mine', '--root', root])).stdout).toMatch(/^mined \d+ agent\(s\): .*dba/);
    const json = await cli(['memory', 'search', 'database connections', '--limit', '2', '--json', '--root', root]);
    const r = JSON.parse(json.stdout);
    expect(r.source).toBe('index');
    expect(r.matches).toHaveLength(2);
    expect(r.matches[0]).toMatchObject({ agent: 'dba', heading: expect.any(String), excerpt: expect.any(String), score: expect.any(Number) });
    // "month" is in finance's and dba's memories: scoped to finance, only finance's come back.
    const both = JSON.parse((await cli(['memory', 'search', 'month', '--json', '--root', root])).stdout);
    expect(new Set(both.matches.map((m: { agent: string }) => m.agent))).toEqual(new Set(['finance', 'dba']));
    const scoped = JSON.parse((await cli(['memory', 'search', 'month', '--agent', 'finance', '--json', '--root', root])).stdout);
    expect(scoped.matches.length).toBeGreaterThan(0); // `every` over nothing would pass
    expect(scoped.matches.every((m: { agent: string }) => m.agent === 'finance')).toBe(true);
    // "rollback" is only devops's: scoped to finance, nothing (not devops's match).
    expect(JSON.parse((await cli(['memory', 'search', 'rollback', '--agent', 'finance', '--json', '--root', root])).stdout).matches).toEqual([]);
  }, 90_000);

  it('search: bad flags are usage errors naming them (exit 2)', async () => {
    const root = await labelledHive(['dba']);
    for (const [args, text] of [
      [['--limit', '0'], 'expected --limit to be a positive integer, got "0"'],
      [['--limit', 'lots'], 'expected --limit to be a positive integer'],
      [['--limit', '500'], 'expected --limit to be at most 100'],
      [['--agent', '../etc'], 'expected --agent to be an agent id'],
      [['--colour', 'red'], "Unknown option '--colour'"],
    ] as const) {
      const r = await cli(['memory', 'search', 'x', ...args, '--root', root]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(text);
    }
    expect((await cli(['memory', 'search', '--root', root])).code).toBe(2);
  });

  it('status, mine --force --json, and MemPalace from --config', async () => {
    const root = await labelledHive(['dba', 'planner']);
    const empty = JSON.parse((await cli(['memory', 'status', '--json', '--root', root])).stdout);
    expect(empty).toEqual({ palaceReady: false, backend: 'grep', lastMineTime: null, indexedAgents: [], documents: 0, mempalace: null });
    const mined = JSON.parse((await cli(['memory', 'mine', '--force', '--json', '--root', root])).stdout);
    expect(mined).toMatchObject({ snapshot: true, mined: expect.arrayContaining(['dba', 'planner']) });
    const status = await cli(['memory', 'status', '--root', root]);
    expect(status.stdout).toMatch(/palace ready:\s+yes\nbackend:\s+index\n/);
    const s = JSON.parse((await cli(['memory', 'status', '--json', '--root', root])).stdout);
    expect(s).toMatchObject({ palaceReady: true, backend: 'index', indexedAgents: expect.arrayContaining(['dba', 'planner']), documents: expect.any(Number) });
    expect(Date.parse(s.lastMineTime)).not.toBeNaN();

    const configFile = path.join(tempDir(), 'hive.config.json');
    fs.writeFileSync(configFile, JSON.stringify({ root, memory: { mempalace: { command: path.join(FIXTURES, 'mempalace-fake.mjs') } } }));
    const viaConfig = await cli(['memory', 'mine', '--config', configFile]);
    expect(viaConfig.stdout).toMatch(/MemPalace mined \d+, failed 0/);
    expect(JSON.parse((await cli(['memory', 'status', '--json', '--root', root])).stdout).backend).toBe('mempalace');
    expect(JSON.parse((await cli(['memory', 'search', 'Postgres', '--json', '--root', root])).stdout).source).toBe('mempalace');
    const bad = await cli(['memory', 'mine', '--config', path.join(tempDir(), 'missing.json')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--config');
  }, 90_000);

  it('condense: condenses (exit 0), aborts when it cannot shrink (exit 1)', async () => {
    const root = await labelledHive(['dba']);
    fs.writeFileSync(agentPaths(root, 'dba').memory, bigMemory('DBA', 40, 5));
    const r = await cli(['memory', 'condense', 'dba', '--root', root]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^condensed agents\/dba\/memory\.md: \d+ → \d+ bytes \(\d+ entries condensed by extractive\); backup /);
    fs.writeFileSync(agentPaths(root, 'dba').memory, '# DBA\n\n## 2025-01-01 — a\n\nx\n');
    const aborted = await cli(['memory', 'condense', 'dba', '--json', '--root', root]);
    expect(aborted.code).toBe(0);
    expect(JSON.parse(aborted.stdout)).toMatchObject({ status: 'skipped' });
    fs.writeFileSync(agentPaths(root, 'dba').memory, `# DBA\n\n${'## 2025-01-01 — a\n\nx\n\n'.repeat(12)}`);
    const small = await cli(['memory', 'condense', 'dba', '--root', root]);
    expect(small.code).toBe(1);
    expect(small.stdout).toContain('aborted: verification failed');
    expect((await cli(['memory', 'condense', '--root', root])).code).toBe(2);
  }, 90_000);

  it('`hive memory` needs a known subcommand (exit 2), and runs as a real process', async () => {
    const none = await cli(['memory']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('missing a subcommand');
    expect(none.stderr).toContain('hive memory search QUERY');
    expect((await cli(['memory', 'frobnicate'])).stderr).toContain('unknown subcommand "frobnicate"');
    const root = await labelledHive(['dba']);
    const r = await runHive(['memory', 'search', 'vacuum', '--json', '--root', root]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ source: 'grep', matches: [expect.objectContaining({ agent: 'dba' })] });
  }, 90_000);
});
