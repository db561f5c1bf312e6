import { isMainThread } from 'node:worker_threads';
import { execa } from 'execa';
import { sharedWithGroup } from '../fs/modes.ts';

/**
 * Git for the audit trail, through execa. The environment is cleaned of variables that
 * would point git at another repository (a hive started from a git hook inherits
 * GIT_DIR/GIT_INDEX_FILE), prompts are off, and signing is off for this repository.
 */

const FOREIGN = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_CEILING_DIRECTORIES', 'GIT_PREFIX'];

/**
 * glibc's malloc gives memory back to the kernel (and asks for it again) in small steps by
 * default: a git adding or importing thousands of files then spends most of its time in
 * brk() (120,000 calls for the 20,000 files of a 10,000-agent hive's first commit; on a
 * virtual machine each one is a trip through the hypervisor). Growing and keeping the heap
 * in 32 MiB steps: `git commit` of those files 5.3 → 2.1 s, `git add` 5.6 → 4.0 s, `git
 * fast-import` 8.9 → 0.65 s (measured side by side). Other C libraries ignore these.
 */
const MALLOC_STEP = String(32 * 1024 * 1024);

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    LC_ALL: 'C',
    MALLOC_TOP_PAD_: MALLOC_STEP,
    MALLOC_TRIM_THRESHOLD_: MALLOC_STEP,
  };
  // Settings from the environment outrank the repository's own config: a .git/config
  // planted in the hive folder cannot make the trail's git run a program of its choosing
  // through an fsmonitor hook or a hooks folder (clean filters it can still name; see the
  // README's table of hostile files). Added after any the user's environment sets.
  const n = Number.parseInt(process.env.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  const ours: [string, string][] = [['core.fsmonitor', 'false'], ['core.hooksPath', '/dev/null']];
  ours.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${n + i}`] = k;
    env[`GIT_CONFIG_VALUE_${n + i}`] = v;
  });
  env.GIT_CONFIG_COUNT = String(n + ours.length);
  for (const k of FOREIGN) delete env[k];
  return env;
}

export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `git ARGS` in `root` from this process; never throws for a non-zero exit (the
 * caller reads `exitCode`), only when git cannot be started.
 * @example const r = await runGit(root, ['rev-list', '--count', 'HEAD']);
 */
export async function runGit(root: string, args: string[], options: { input?: string } = {}): Promise<GitResult> {
  const r = await startGit(root, args, options.input !== undefined ? { input: options.input } : { stdin: 'ignore' });
  if (r.failed && r.exitCode === undefined) throw new Error(`git ${args[0]} could not run: ${r.message}`);
  return { exitCode: r.exitCode ?? 1, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

/** `runGit` with bytes in and out (paths that need not be UTF-8). */
export async function runGitBytes(root: string, args: string[], input?: Buffer): Promise<{ exitCode: number; stdout: Buffer; stderr: string }> {
  const r = await startGit(root, args, { encoding: 'buffer', ...(input ? { input } : { stdin: 'ignore' as const }) });
  if (r.failed && r.exitCode === undefined) throw new Error(`git ${args[0]} could not run: ${r.message}`);
  return { exitCode: r.exitCode ?? 1, stdout: Buffer.from(r.stdout as Uint8Array), stderr: Buffer.from(r.stderr as Uint8Array).toString().trim() };
}

/**
 * Starts git in `root` (a child to await, or to write to with `stdin: 'pipe'`): the
 * cleaned environment, never rejecting for an exit code, and under the hive's own umask:
 * git creates some files with the umask whatever core.sharedRepository says
 * (COMMIT_EDITMSG, a pack's temp files); a child takes the umask when it is spawned,
 * which execa does before it returns.
 */
export function startGit<const O extends { input?: string | Buffer; stdin?: 'ignore' | 'pipe'; encoding?: 'utf8' | 'buffer' }>(root: string, args: string[], options: O) {
  const previous = isMainThread ? process.umask(sharedWithGroup(root) ? 0o027 : 0o077) : null;
  try {
    return execa('git', args, {
      cwd: root,
      env: gitEnv(),
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
      // Never kill git when the hive exits: a git killed mid-commit leaves index.lock behind.
      // (execa's cleanup also installs signal-exit handlers, which re-raise a SIGINT the
      // CLI handles itself: `hive start` would die on Ctrl-C while a commit runs.)
      cleanup: false,
      ...options,
    });
  } finally {
    if (previous !== null) process.umask(previous);
  }
}
