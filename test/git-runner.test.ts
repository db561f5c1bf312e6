import { describe, expect, it } from 'vitest';
import { git } from '../src/audit/git.ts';
import { acquireGitRunner, currentGitRunner, startedGitRunner } from '../src/audit/git-runner.ts';
import { tempDir } from './helpers/temp.ts';

/** The pid of the process that started git: a git alias reads its own parent from /proc. */
async function parentOfGit(cwd: string): Promise<number> {
  const r = await git(cwd, ['-c', 'alias.parent=!f() { sed -n "s/^PPid:\\s*//p" /proc/$PPID/status; }; f', 'parent']);
  expect(r.exitCode, r.stderr).toBe(0);
  return Number(r.stdout.trim());
}

describe.skipIf(process.platform !== 'linux')('git runner', () => {
  it('git is started by the runner process while one is up, by this process before and after', async () => {
    const root = tempDir('git-runner-');
    expect(await parentOfGit(root)).toBe(process.pid);
    const release = acquireGitRunner();
    const runner = (await startedGitRunner())!;
    expect(await runner.up).toBe(true);
    expect(runner.pid).toBeGreaterThan(0);
    expect(runner.pid).not.toBe(process.pid);
    expect(await parentOfGit(root)).toBe(runner.pid);
    // Input reaches git through the runner (hash-object reads stdin).
    const hashed = await git(root, ['hash-object', '--stdin'], { input: 'hello\n' });
    expect(hashed.stdout.trim()).toBe('ce013625030ba8dba906f756967f9e9ca394464a');

    const release2 = acquireGitRunner(); // a second trail in this process shares it
    expect(await startedGitRunner()).toBe(runner);
    release();
    expect(currentGitRunner()).toBe(runner);
    release2();
    expect(currentGitRunner()).toBeNull();
    expect(await runner.up).toBe(true);
    expect(await parentOfGit(root)).toBe(process.pid);
  });

  it('a runner that dies (SIGKILL) leaves git running from this process; nothing waits forever', async () => {
    const root = tempDir('git-runner-');
    const release = acquireGitRunner();
    try {
      const runner = (await startedGitRunner())!;
      expect(await runner.up).toBe(true);
      // A request in flight when the runner dies is run again here (it was read-only).
      const inFlight = git(root, ['-c', 'alias.slow=!sleep 0.3; echo done', 'slow']);
      process.kill(runner.pid!, 'SIGKILL');
      const r = await inFlight;
      expect(r.exitCode).toBe(0);
      expect(r.stdout.trim()).toBe('done');
      expect(currentGitRunner()).toBeNull();
      expect(await parentOfGit(root)).toBe(process.pid);
    } finally {
      release();
    }
  });
});
