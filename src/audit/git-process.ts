// The git runner's process (see git-runner.ts): runs the git commands its parent sends
// and answers each. Compiled by the supervisor and started with execaNode; never
// imported by the package. It exits when its parent goes: the IPC channel closes and
// nothing is left to wait for (git processes it started finish on their own).
import { runGit } from './git-exec.ts';
import type { GitRequest, GitRunnerMessage } from './git-runner.ts';

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
