import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { gitEnv, runGit, type GitResult } from './git-exec.ts';

/**
 * The audit trail's first commit of a hive, written as one pack by `git fast-import`
 * instead of `git add -A` + `git commit` (docs/architecture.md, "Idle agents cost
 * nothing"). A hive of 10,000 agents starts with 20,000 files to record (identity.md and
 * memory.md of each); `git add` writes each as a loose object file and `git commit` a
 * loose tree object per agent folder, 30,000 file creations that cost seconds of kernel
 * time on the hive's cores right after it is ready. Measured on such a tree, side by
 * side: add + commit 3.8 + 2.6 s; this 0.65 s for the import, then `read-tree` and
 * `update-index --refresh` (which stats and hashes the files, writing nothing but the
 * index) ~0.6 s.
 *
 * What it records is what `git add -A` would: the files git lists as cached or untracked
 * and not ignored, regular files (executable or not) and symlinks (as links); anything
 * else (a FIFO, a socket) is left out, as git leaves it. A file changed while it is read
 * is recorded as read; the refresh then finds it modified and the next commit takes it.
 * Runs in the git runner's process (git-process.ts) at its low priority.
 */
export async function importFirstCommit(root: string, message: string): Promise<GitResult> {
  const head = await runGit(root, ['symbolic-ref', '-q', 'HEAD']);
  const ident = await runGit(root, ['var', 'GIT_COMMITTER_IDENT']);
  if (head.exitCode !== 0 || ident.exitCode !== 0) return failed(`cannot name the branch or the committer: ${(head.stderr || ident.stderr).trim()}`);
  const listed = await runGit(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (listed.exitCode !== 0) return failed(`git ls-files: ${listed.stderr.trim()}`);
  const files = [...new Set(listed.stdout.split('\0').filter(Boolean))];
  const child = execa('git', ['fast-import', '--quiet', '--done'], { cwd: root, env: gitEnv(), extendEnv: false, reject: false, stdin: 'pipe', cleanup: false });
  const out = child.stdin!;
  const write = async (chunk: string | Buffer) => {
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  const entries: string[] = [];
  try {
    for (const file of files) {
      const blob = readEntry(path.join(root, file));
      if (!blob) continue;
      const mark = entries.length + 1;
      await write(`blob\nmark :${mark}\ndata ${blob.data.length}\n`);
      await write(blob.data);
      await write('\n');
      entries.push(`M ${blob.mode} :${mark} ${quotePath(file)}\n`);
    }
    const text = Buffer.from(`${message}\n`);
    await write(`commit ${head.stdout.trim()}\ncommitter ${ident.stdout.trim()}\ndata ${text.length}\n`);
    await write(text);
    for (const e of entries) await write(e);
    await write('\ndone\n');
  } catch {
    // git went away (its stderr says why, below)
  }
  out.end();
  const r = await child;
  if (r.exitCode !== 0) return failed(`git fast-import: ${String(r.stderr ?? r.message).trim()}`);
  // The index as that commit, then each entry's stat data (without it every later `git
  // add` would hash every file again).
  const read = await runGit(root, ['read-tree', 'HEAD']);
  if (read.exitCode !== 0) return failed(`git read-tree: ${read.stderr.trim()}`);
  await runGit(root, ['update-index', '-q', '--refresh']); // exit 1: files changed since they were read
  return { exitCode: 0, stdout: `${entries.length} files\n`, stderr: '' };
}

/** A file as git records it: content and mode, or null for what git leaves out. */
function readEntry(file: string): { mode: string; data: Buffer } | null {
  try {
    const st = fs.lstatSync(file);
    if (st.isSymbolicLink()) return { mode: '120000', data: Buffer.from(fs.readlinkSync(file)) };
    if (!st.isFile()) return null;
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
      return { mode: (st.mode & 0o111) !== 0 ? '100755' : '100644', data: fs.readFileSync(fd) };
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null; // gone since git listed it
  }
}

/** A path as fast-import reads it: C-style quoted when it holds a quote, a backslash, a newline or starts with a quote. */
export function quotePath(p: string): string {
  if (!/["\\\n]/.test(p)) return p;
  return `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function failed(stderr: string): GitResult {
  return { exitCode: 1, stdout: '', stderr };
}
