import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ensureRepo, git, HIVE_GITIGNORE } from '../src/audit/git.ts';
import { importFirstCommit, quotePath } from '../src/audit/first-commit.ts';
import { AuditTrail } from '../src/audit/trail.ts';
import { acquireGitRunner } from '../src/audit/git-runner.ts';
import { readLog } from '../src/log/read.ts';
import { tempDir } from './helpers/temp.ts';

/** A hive-like tree with everything git treats specially: ignored files, a symlink, an executable, a FIFO, odd names. */
function plantTree(root: string): void {
  for (let i = 0; i < 60; i++) {
    const dir = path.join(root, 'agents', `agent-${i}`);
    fs.mkdirSync(path.join(dir, 'inbox'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'identity.md'), `# agent-${i}\n`);
    fs.writeFileSync(path.join(dir, 'memory.md'), `# Memory ${i}\n${'x'.repeat(i * 37)}\n`);
    fs.writeFileSync(path.join(dir, 'state.wal'), 'not recorded');
    fs.writeFileSync(path.join(dir, 'inbox', '000000000001.jsonl'), 'not recorded');
  }
  fs.writeFileSync(path.join(root, 'registry.json'), '{"agents":[]}\n');
  fs.writeFileSync(path.join(root, 'notes "quoted" \\ and\nnewline.txt'), 'a person left this\n');
  fs.writeFileSync(path.join(root, 'tool.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  fs.writeFileSync(path.join(root, 'group-exec.sh'), 'x\n', { mode: 0o654 }); // git: executable only if the owner may run it
  fs.writeFileSync(Buffer.from([...Buffer.from(`${root}/latin1-`), 0xe9, ...Buffer.from('.md')]), 'not UTF-8 in its name\n');
  fs.symlinkSync('registry.json', path.join(root, 'link-to-registry'));
  fs.writeFileSync(path.join(root, 'ünïcode.md'), 'naïve\n');
  fs.writeFileSync(path.join(root, 'empty.md'), '');
  execFileSync('mkfifo', [path.join(root, 'a-fifo')]);
}

const treeOf = async (root: string) => (await git(root, ['ls-tree', '-r', '-z', 'HEAD'])).stdout.split('\0').filter(Boolean).sort();

describe('the audit trail\'s first commit as one pack', () => {
  it('records exactly the tree `git add -A` + `git commit` would (modes, symlinks, odd names, ignored files left out, a FIFO skipped), as one pack, with the index refreshed', async () => {
    const [imported, added] = [tempDir('first-commit-'), tempDir('first-commit-')];
    for (const root of [imported, added]) {
      await ensureRepo(root);
      plantTree(root);
    }
    expect(fs.readFileSync(path.join(imported, '.gitignore'), 'utf8')).toBe(HIVE_GITIGNORE);
    const r = await importFirstCommit(imported, 'hive: started\n\n- hive started');
    expect(r.exitCode, r.stderr).toBe(0);
    expect((await git(added, ['add', '-A'])).exitCode).toBe(0);
    expect((await git(added, ['commit', '-q', '--no-verify', '-m', 'x'])).exitCode).toBe(0);
    const tree = await treeOf(imported);
    expect(tree).toEqual(await treeOf(added));
    expect(tree.some((l) => l.startsWith('120000') && l.endsWith('link-to-registry'))).toBe(true);
    expect(tree.some((l) => l.startsWith('100755') && l.endsWith('tool.sh'))).toBe(true);
    expect(tree.some((l) => l.includes('newline'))).toBe(true);
    expect(tree.some((l) => /state\.wal|inbox|a-fifo/.test(l))).toBe(false);
    // One pack, no loose objects; the index knows every file (nothing to add, nothing modified).
    const objects = (await git(imported, ['count-objects', '-v'])).stdout;
    expect(objects).toMatch(/^count: 0$/m);
    expect(objects).toMatch(/^packs: 1$/m);
    expect((await git(imported, ['diff-files', '--name-only'])).stdout).toBe(''); // the index has every file's stat data (no refresh: all listed)
    expect((await git(imported, ['status', '--porcelain'])).stdout).toBe('');
    expect((await git(imported, ['log', '--format=%s', 'HEAD'])).stdout.trim()).toBe('hive: started');
  });

  it('a stream of many pieces (3 MiB of memory and 3,000 small files) records the same tree as git add', async () => {
    const [imported, added] = [tempDir('first-commit-'), tempDir('first-commit-')];
    for (const root of [imported, added]) {
      await ensureRepo(root);
      plantTree(root);
      fs.writeFileSync(path.join(root, 'agents', 'agent-1', 'memory.md'), Buffer.alloc(3 << 20, 'm'));
      for (let i = 0; i < 3_000; i++) fs.writeFileSync(path.join(root, 'agents', `agent-${i % 60}`, `identity.md`), `# agent ${i}\n`);
      fs.mkdirSync(path.join(root, 'notes'));
      for (let i = 0; i < 3_000; i++) fs.writeFileSync(path.join(root, 'notes', `n-${i}.md`), `note ${i} ${'y'.repeat(i % 700)}\n`);
    }
    expect((await importFirstCommit(imported, 'first')).exitCode).toBe(0);
    expect((await git(added, ['add', '-A'])).exitCode).toBe(0);
    expect((await git(added, ['commit', '-q', '--no-verify', '-m', 'x'])).exitCode).toBe(0);
    const tree = await treeOf(imported);
    expect(tree.length).toBeGreaterThan(3_000);
    expect(tree).toEqual(await treeOf(added));
    expect((await git(imported, ['status', '--porcelain'])).stdout).toBe('');
  });

  it('a file changed after the import read it is left modified, and the next commit takes it', async () => {
    const root = tempDir('first-commit-');
    await ensureRepo(root);
    plantTree(root);
    expect((await importFirstCommit(root, 'first')).exitCode).toBe(0);
    fs.appendFileSync(path.join(root, 'agents', 'agent-3', 'memory.md'), 'learned something\n');
    expect((await git(root, ['status', '--porcelain'])).stdout.trim()).toBe('M agents/agent-3/memory.md');
  });

  it('a commit whose index was never refreshed (the runner killed between the import and read-tree) stands: the next commit finds nothing to record, and the index is whole again', async () => {
    const root = tempDir('first-commit-');
    await ensureRepo(root);
    plantTree(root);
    expect((await importFirstCommit(root, 'first')).exitCode).toBe(0);
    fs.rmSync(path.join(root, '.git', 'index')); // as if read-tree never ran
    const trail = new AuditTrail(root, { intervalMs: 60_000 });
    await trail.start();
    await trail.flush();
    await trail.close();
    expect((await git(root, ['rev-list', '--count', 'HEAD'])).stdout.trim()).toBe('1');
    expect((await git(root, ['status', '--porcelain'])).stdout).toBe('');
    expect(readLog(root).filter((e) => e.type === 'audit.failed')).toEqual([]);
  });

  it('paths are quoted for fast-import only when they must be', () => {
    expect(quotePath('agents/a-1/memory.md').toString()).toBe('agents/a-1/memory.md');
    expect(quotePath('with space "and" quotes\\.md').toString()).toBe('with space "and" quotes\\.md');
    expect(quotePath('a"b\\c\nd').toString()).toBe('"a\\"b\\\\c\\nd"');
    expect(quotePath('"leading').toString()).toBe('"\\"leading"');
  });

  it('declines (the trail then adds and commits) where git add would transform or link a file: gitattributes, core.autocrlf, a nested repository', async () => {
    const cases: [string, (root: string) => Promise<void> | void][] = [
      ['gitattributes', (root) => fs.writeFileSync(path.join(root, '.gitattributes'), '*.md text eol=crlf\n')],
      ['autocrlf', async (root) => void (await git(root, ['config', 'core.autocrlf', 'input']))],
      ['nested repository', (root) => execFileSync('git', ['init', '-q', path.join(root, 'nested')])],
    ];
    for (const [what, plant] of cases) {
      const root = tempDir('first-commit-');
      await ensureRepo(root);
      fs.writeFileSync(path.join(root, 'registry.json'), '{}\n');
      fs.writeFileSync(path.join(root, 'notes.md'), 'line\n');
      if (what === 'nested repository') fs.mkdirSync(path.join(root, 'nested'));
      await plant(root);
      if (what === 'nested repository') fs.writeFileSync(path.join(root, 'nested', 'f'), 'x');
      const r = await importFirstCommit(root, 'first');
      expect(r.exitCode, what).toBe(2);
      expect((await git(root, ['rev-parse', '--verify', '-q', 'HEAD'])).exitCode, what).not.toBe(0); // nothing written
    }
  });

  it('a fast-import that dies mid-stream ends the import with its error (no hang), nothing committed', async () => {
    const root = tempDir('first-commit-');
    await ensureRepo(root);
    plantTree(root);
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(root, `big-${i}.md`), 'y'.repeat(4_096)); // more than a pipe holds
    const pack = path.join(root, '.git', 'objects', 'pack');
    fs.rmSync(pack, { recursive: true, force: true });
    fs.writeFileSync(pack, 'not a folder: fast-import cannot write its pack');
    const r = await importFirstCommit(root, 'first');
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/fast-import/);
    expect((await git(root, ['rev-parse', '--verify', '-q', 'HEAD'])).exitCode).not.toBe(0);
  });

  it('an audit trail with its git runner up writes a new hive\'s first commit this way, and later ones as usual', async () => {
    const root = tempDir('first-commit-');
    fs.mkdirSync(path.join(root, 'agents', 'a'), { recursive: true });
    fs.writeFileSync(path.join(root, 'agents', 'a', 'identity.md'), '# a\n');
    const lease = acquireGitRunner();
    try {
      expect(await lease.ready).toBe(true);
      const trail = new AuditTrail(root, { intervalMs: 60_000 });
      await trail.start(); // notes 'hive started'
      await trail.flush();
      expect(readLog(root).filter((e) => e.type === 'audit.committed').map((e) => e.imported ?? false)).toEqual([true]);
      fs.writeFileSync(path.join(root, 'agents', 'a', 'memory.md'), 'later\n');
      trail.note('turn of a');
      await trail.flush();
      expect((await git(root, ['log', '--format=%s', 'HEAD'])).stdout.trim().split('\n')).toEqual(['hive: turn of a', 'hive: hive started']);
      expect((await git(root, ['show', '--name-only', '--format=', 'HEAD'])).stdout.trim()).toBe('agents/a/memory.md');
      await trail.close();
      expect(readLog(root).filter((e) => e.type === 'audit.committed').map((e) => e.imported ?? false)).toEqual([true, false]);
      expect(readLog(root).filter((e) => e.type === 'audit.failed' || e.type === 'audit.import-failed')).toEqual([]);
    } finally {
      lease.release();
    }
  });
});
