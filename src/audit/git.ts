import fs from 'node:fs';
import path from 'node:path';
import { runGit, type GitResult } from './git-exec.ts';
import { currentGitRunner } from './git-runner.ts';
import { hiveModes } from '../fs/modes.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { writeFileAtomic } from '../fs/atomic.ts';

export type { GitResult } from './git-exec.ts';

/**
 * Runs `git ARGS` in `root`; never throws for a non-zero exit (the caller reads
 * `exitCode`), only when git cannot be started. Through this process's git runner when
 * one is up (an audit trail starts it; see git-runner.ts for why), else directly.
 * @example const r = await git(root, ['rev-list', '--count', 'HEAD']);
 */
export async function git(root: string, args: string[], options: { input?: string } = {}): Promise<GitResult> {
  const runner = currentGitRunner();
  if (runner) {
    const r = await runner.run(root, args, options);
    if (r) return r;
  }
  return runGit(root, args, options);
}

/**
 * The repository's first commit written as one pack (src/audit/first-commit.ts), through
 * this process's git runner; null when no runner is up (the caller then adds and commits).
 */
export async function firstCommit(root: string, message: string): Promise<GitResult | null> {
  return (await currentGitRunner()?.firstCommit(root, message)) ?? null;
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
# Event log (rotated; read it with \`hive log\`)
/log.jsonl
/log-*.jsonl
# Secrets: the hive key mints every agent's hook token (in git it could never be revoked)
/hive.key
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

/** git's mode for the audit repository's files: the hive's own file mode. */
function gitShared(): string {
  return `0${hiveModes().file.toString(8)}`;
}

/**
 * Makes `root` a git repository ready for unattended commits: `git init`, a local
 * identity (so commits work on a fresh machine), no signing, and the hive `.gitignore`.
 * Idempotent. Returns true when the repository was created now.
 */
export async function ensureRepo(root: string): Promise<boolean> {
  const created = !exists(path.join(root, '.git'));
  if (created) {
    const r = await git(root, ['init', '-q', '--initial-branch=main', `--shared=${gitShared()}`]);
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
    // The history holds what the hive holds: as private as the hive (src/fs/modes.ts).
    ['core.sharedRepository', gitShared()],
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
    current = readRegularFile(ignore, 'utf8');
  } catch {
    current = '';
  }
  // Replaced, not written through: a symlink named .gitignore is swapped for the file.
  if (current !== HIVE_GITIGNORE) writeFileAtomic(ignore, HIVE_GITIGNORE, { durable: false });
  return created;
}
