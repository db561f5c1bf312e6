// The git runner's process (see git-runner.ts): runs the git commands its parent sends
// and answers each. Compiled by the supervisor and started with execaNode; never
// imported by the package. It exits when its parent goes: the IPC channel closes and
// nothing is left to wait for (git processes it started finish on their own).
import os from 'node:os';
import { runGit } from './git-exec.ts';
import type { GitRequest, GitRunnerMessage } from './git-runner.ts';

// Audit commits are background work: the runner and the gits it starts (they inherit
// this) yield the CPU to the actors.
try {
  os.setPriority(10);
} catch {
  // not permitted here: run at normal priority
}

function send(m: GitRunnerMessage): void {
  if (process.connected) process.send?.(m);
}

process.on('message', (req: GitRequest) => {
  runGit(req.cwd, req.args, req.input !== undefined ? { input: req.input } : {}).then(
    (result) => send({ type: 'done', id: req.id, result }),
    (err: unknown) => send({ type: 'failed', id: req.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
send({ type: 'ready' });
