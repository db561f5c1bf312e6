// The git runner's process (see git-runner.ts): runs the git commands its parent sends
// and answers each. Compiled by the supervisor and started with execaNode; never
// imported by the package. It exits when its parent goes: the IPC channel closes and
// nothing is left to wait for (git processes it started finish on their own).
import os from 'node:os';
import { runGit } from './git-exec.ts';
import { importFirstCommit } from './first-commit.ts';
import type { GitRequest, GitRunnerMessage } from './git-runner.ts';

// Audit commits are background work: the runner and the gits it starts (they inherit
// this) yield the CPU to the actors. The lowest priority (19, a CFS weight of 15 against
// the actors' 1024): the first commit of a hive of 10,000 agents adds ~50,000 files, and
// at 10 it took a share of the 2 cores that held messages up (bench:scale).
try {
  os.setPriority(19);
} catch {
  // not permitted here: run at normal priority
}

/**
 * Answers the parent. A parent that went away before the answer (a hive stopped within a
 * second of its start, while this runner still booted) makes the write fail with EPIPE:
 * that error comes to the callback, not as an unhandled 'error' event that printed a stack
 * trace on the hive's stderr. The closing channel ends this process anyway.
 */
function send(m: GitRunnerMessage): void {
  if (process.connected) process.send?.(m, undefined, {}, () => undefined);
}

process.on('message', (req: GitRequest) => {
  const run = req.firstCommit !== undefined ? importFirstCommit(req.cwd, req.firstCommit) : runGit(req.cwd, req.args, req.input !== undefined ? { input: req.input } : {});
  run.then(
    (result) => send({ type: 'done', id: req.id, result }),
    (err: unknown) => send({ type: 'failed', id: req.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
send({ type: 'ready' });
