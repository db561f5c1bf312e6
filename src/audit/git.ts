import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';

/**
 * Git for the audit trail, through execa. The environment is cleaned of variables that
 * would point git at another repository (a hive started from a git hook inherits
 * GIT_DIR/GIT_INDEX_FILE), prompts are off, and signing is off for this repository.
 */

const FOREIGN = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_CEILING_DIRECTORIES', 'GIT_PREFIX'];

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C' };
  for (const k of FOREIGN) delete env[k];
  return env;
}

export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `git ARGS` in `root`; never throws for a non-zero exit (the caller reads
 * `exitCode`), only when git cannot be started.
 * @example const r = await git(root, ['rev-list', '--count', 'HEAD']);
 */
export async function git(root: string, args: string[], options: { input?: string } = {}): Promise<GitResult> {
  const r = await execa('git', args, {
    cwd: root,
    env: gitEnv(),
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    // Never kill git when the hive exits: a git killed mid-commit leaves index.lock behind.
    // (execa's cleanup also installs signal-exit handlers, which re-raise a SIGINT the
    // CLI handles itself: `hive start` would die on Ctrl-C while a commit runs.)
    cleanup: false,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' as const }),
  });
  if (r.failed && r.exitCode === undefined) throw new Error(`git ${args[0]} could not run: ${r.message}`);
  return { exitCode: r.exitCode ?? 1, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

/** What the audit trail keeps out of git: queues, journals, state, WAL, sockets, locks, the index. */
export const HIVE_GITIGNORE = `# Written by hive: the audit trail commits significant state (registry, identities,
# memories, questions and answers, config) and none of the fast-changing runtime files.
# Queues
/agents/*/inbox/
/agents/*/outbox/
/dead-letter/
# Per-agent runtime files (state, WAL, cursor, journals, sessions): only identity and memory are kept
/agents/*/*
!/agents/*/identity.md
!/agents/*/memory.md
!/agents/god/answers.json
# Event log (rotated; read it with \`hive log\`)
/log.jsonl
/log-*.jsonl
# Locks, sockets, runtime markers
*.lock
*.lock/
*.lock.json
*.lock.intent-*
*.sock
*.sock.path
/kickoff.json
# Journals and WAL files anywhere
*.wal
*.journal
journal/
# The search index and reflector backups (rebuilt or redundant with history)
/palace/
/backups/
# Temp files of atomic writes
.tmp-*
`;

function exists(p: string): boolean {
  return fs.existsSync(p);
}

/**
 * Makes `root` a git repository ready for unattended commits: `git init`, a local
 * identity (so commits work on a fresh machine), no signing, and the hive `.gitignore`.
 * Idempotent. Returns true when the repository was created now.
 */
export async function ensureRepo(root: string): Promise<boolean> {
  const created = !exists(path.join(root, '.git'));
  if (created) {
    const r = await git(root, ['init', '-q', '--initial-branch=main']);
    if (r.exitCode !== 0) throw new Error(`git init failed in ${root}: ${r.stderr.trim()}`);
  }
  const settings: [string, string][] = [
    ['user.name', 'Hive'],
    ['user.email', 'hive@localhost'],
    ['commit.gpgsign', 'false'],
    ['tag.gpgsign', 'false'],
    ['core.autocrlf', 'false'],
    // Auto-gc would run git in the background and hold locks while the hive commits.
    ['gc.autoDetach', 'false'],
  ];
  // One read of the local config; only what differs is set (each git run costs a process).
  const list = await git(root, ['config', '--local', '--list']);
  const local = new Map(
    list.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]),
  );
  for (const [k, v] of settings) if (local.get(k) !== v) await git(root, ['config', '--local', k, v]);
  const ignore = path.join(root, '.gitignore');
  let current = '';
  try {
    current = fs.readFileSync(ignore, 'utf8');
  } catch {
    current = '';
  }
  if (current !== HIVE_GITIGNORE) fs.writeFileSync(ignore, HIVE_GITIGNORE);
  return created;
}
