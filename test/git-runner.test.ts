import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git } from '../src/audit/git.ts';
import { acquireGitRunner, currentGitRunner, startedGitRunner } from '../src/audit/git-runner.ts';
import { tempDir } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { AuditTrail } from '../src/audit/trail.ts';

function exeOf(pid: number): string | null {
  try {
    return fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return null;
  }
}

/** A process's nice value (/proc/<pid>/stat, field 19). */
function niceOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

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
    const lease = acquireGitRunner();
    expect(await lease.ready).toBe(true);
    const runner = (await startedGitRunner())!;
    expect(runner.pid).toBeGreaterThan(0);
    expect(runner.pid).not.toBe(process.pid);
    expect(await parentOfGit(root)).toBe(runner.pid);
    // Input reaches git through the runner (hash-object reads stdin).
    const hashed = await git(root, ['hash-object', '--stdin'], { input: 'hello\n' });
    expect(hashed.stdout.trim()).toBe('ce013625030ba8dba906f756967f9e9ca394464a');

    const lease2 = acquireGitRunner(); // a second trail in this process shares it
    expect(await startedGitRunner()).toBe(runner);
    lease.release();
    expect(currentGitRunner()).toBe(runner);
    lease2.release();
    expect(currentGitRunner()).toBeNull();
    expect(await runner.up).toBe(true);
    expect(await parentOfGit(root)).toBe(process.pid);
  });

  it('a runner that dies (SIGKILL) leaves git running from this process; nothing waits forever', async () => {
    const root = tempDir('git-runner-');
    const lease = acquireGitRunner();
    try {
      expect(await lease.ready).toBe(true);
      const runner = (await startedGitRunner())!;
      // A request in flight when the runner dies is run again here (it was read-only).
      const inFlight = git(root, ['-c', 'alias.slow=!sleep 0.3; echo done', 'slow']);
      process.kill(runner.pid!, 'SIGKILL');
      const r = await inFlight;
      expect(r.exitCode).toBe(0);
      expect(r.stdout.trim()).toBe('done');
      expect(currentGitRunner()).toBeNull();
      expect(await parentOfGit(root)).toBe(process.pid);
    } finally {
      lease.release();
    }
  });

  it.each(['0', '1'])('a process whose runner is idle exits by itself, and the runner with it (RELEASE=%s)', async (release) => {
    const { lines, exited } = collectLines(startFixture('git-runner-user.ts', [], { RELEASE: release }));
    const { code, stderr } = await exited;
    expect(code, stderr).toBe(0);
    const report = JSON.parse(lines[0]!) as { up: boolean; runnerPid: number; version: string };
    expect(report.up).toBe(true);
    expect(report.version).toMatch(/^git version/);
    // The runner leaves when its parent's channel closes: wait for that, bounded.
    const deadline = Date.now() + 5_000;
    while (isRunning(report.runnerPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(isRunning(report.runnerPid)).toBe(false);
  });

  it('a runner released while it still boots ends quietly: no EPIPE stack trace on the parent\'s stderr', async () => {
    // One after another, releasing at times spread over the runner's boot (~100–300 ms here):
    // on the code before, about one run in three printed the EPIPE.
    const runs: string[] = [];
    for (const after of [40, 80, 120, 160, 200, 240, 280]) runs.push((await collectLines(startFixture('git-runner-early-release.ts', [], { AFTER: String(after) })).exited).stderr);
    expect(runs.filter((stderr) => /EPIPE|Unhandled/.test(stderr))).toEqual([]);
  });

  it('a trail starts the runner with start(), at nice 19 from its first instruction; its commits use it; closing leaves none behind', async () => {
    const held = new AuditTrail(tempDir('git-runner-'), { intervalMs: 100 });
    held.hold();
    await held.start();
    const runner = await startedGitRunner();
    expect(runner?.pid).toBeGreaterThan(0);
    // As soon as the runner's process is node (nice(1) has exec'd it), long before the
    // runner could lower its own priority (it does so once it has loaded).
    const node = fs.realpathSync(process.execPath);
    const deadline = Date.now() + 5_000;
    while (exeOf(runner!.pid!) !== node && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(exeOf(runner!.pid!)).toBe(node);
    expect(niceOf(runner!.pid!)).toBe(19);
    expect(await runner!.up).toBe(true);
    await held.close(); // its last commit goes through the runner
    expect(held.commits).toBe(1);
    expect(currentGitRunner()).toBeNull();
  });
});
