import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { runGit, runGitBytes, startGit, type GitResult } from './git-exec.ts';
import { readOpenFile } from '../fs/regular-file.ts';

/**
 * The audit trail's first commit of a hive, written as one pack by `git fast-import`
 * instead of `git add -A` + `git commit` (docs/architecture.md, "Idle agents cost
 * nothing"). A hive of 10,000 agents starts with 20,000 files to record (identity.md and
 * memory.md of each); `git add` writes each as a loose object file and `git commit` a
 * loose tree object per agent folder, 30,000 file creations that cost seconds of kernel
 * time on the hive's cores right after it is ready. Measured on such a tree, side by
 * side: add + commit 3.8 + 2.6 s; this 0.65 s for the import, then `read-tree` and
 * `update-index --refresh` (which stats and hashes the files, writing nothing but the
 * index) ~0.6 s. The whole first commit of such a hive (its 20,000 files in the page cache)
 * took 4.0 s of CPU between this process and git; writing the stream in ~1 MiB pieces and
 * reading each file with one read, 2.6 s (3 rounds each, interleaved in one process, same
 * tree).
 *
 * What it records is what `git add -A` would: the files git lists as cached or untracked
 * and not ignored, regular files (executable when the owner may run them, as git tests)
 * and symlinks (as links); anything else (a FIFO, a socket) is left out, as git leaves it.
 * Where git would transform or link something (gitattributes that apply to any file:
 * filters, eol; core.autocrlf; a nested repository), it declines (`exitCode` 2) and the
 * caller adds and commits as usual. A file changed while it is read is recorded as read;
 * the refresh then finds it modified and the next commit takes it. Runs in the git
 * runner's process (git-process.ts) at its low priority.
 */
export async function importFirstCommit(root: string, message: string): Promise<GitResult> {
  const [head, committer, author, autocrlf] = await Promise.all([
    runGit(root, ['symbolic-ref', '-q', 'HEAD']),
    runGit(root, ['var', 'GIT_COMMITTER_IDENT']),
    runGit(root, ['var', 'GIT_AUTHOR_IDENT']),
    runGit(root, ['config', '--get', 'core.autocrlf']),
  ]);
  if (head.exitCode !== 0 || committer.exitCode !== 0 || author.exitCode !== 0) return failed(1, `cannot name the branch or the committer: ${(head.stderr || committer.stderr || author.stderr).trim()}`);
  if (['true', 'input'].includes(autocrlf.stdout.trim().toLowerCase())) return failed(2, 'core.autocrlf converts line ends: left to git add');
  const listed = await runGitBytes(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (listed.exitCode !== 0) return failed(1, `git ls-files: ${listed.stderr}`);
  const files = splitNul(listed.stdout);
  // A path ending in "/" is a nested repository, which add records as a gitlink.
  if (files.some((f) => f[f.length - 1] === 0x2f)) return failed(2, 'a nested repository: left to git add');
  const attributes = await runGitBytes(root, ['check-attr', '-a', '-z', '--stdin'], Buffer.concat(files.flatMap((f) => [f, NUL])));
  if (attributes.exitCode !== 0) return failed(1, `git check-attr: ${attributes.stderr}`);
  if (attributes.stdout.length > 0) return failed(2, 'gitattributes apply to some files: left to git add');

  const child = startGit(root, ['fast-import', '--quiet', '--done'], { stdin: 'pipe' });
  const out = child.stdin!;
  out.on('error', () => undefined); // git gone (EPIPE): its exit code and stderr tell why
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(() => {
    exited = true;
  });
  // The stream goes in pieces of ~1 MiB: written as it was composed (three writes per
  // file), 20,000 files cost 60,000 pipe writes and as many reads by git, ~1.5 s of CPU
  // on both sides of the pipe, right after a 10,000-agent hive is ready.
  let parts: Buffer[] = [];
  let size = 0;
  const send = async () => {
    if (exited) throw new Error('git fast-import ended');
    const chunk = Buffer.concat(parts, size);
    parts = [];
    size = 0;
    if (!out.write(chunk)) await Promise.race([once(out, 'drain'), gone]);
  };
  const write = async (piece: string | Buffer) => {
    const b = typeof piece === 'string' ? Buffer.from(piece) : piece;
    parts.push(b);
    size += b.length;
    if (size >= STREAM_PIECE) await send();
  };
  const entries: Buffer[] = [];
  try {
    for (const file of files) {
      const blob = readEntry(Buffer.concat([Buffer.from(`${root}${path.sep}`), file]));
      if (!blob) continue;
      const mark = entries.length + 1;
      await write(`blob\nmark :${mark}\ndata ${blob.data.length}\n`);
      await write(blob.data);
      await write('\n');
      entries.push(Buffer.concat([Buffer.from(`M ${blob.mode} :${mark} `), quotePath(file), Buffer.from('\n')]));
    }
    const text = Buffer.from(`${message}\n`);
    await write(`commit ${head.stdout.trim()}\nauthor ${author.stdout.trim()}\ncommitter ${committer.stdout.trim()}\ndata ${text.length}\n`);
    await write(text);
    for (const e of entries) await write(e);
    await write('\ndone\n');
    await send();
  } catch {
    // git went away: its stderr says why, below
  }
  out.end();
  const r = await child;
  if (r.exitCode !== 0) return failed(1, `git fast-import: ${String(r.stderr || r.message).trim()}`);
  // The index as that commit, then each entry's stat data (without it every later `git
  // add` would hash every file again). The commit stands either way: a failure here only
  // leaves the next add more to hash.
  const read = await runGit(root, ['read-tree', 'HEAD']);
  if (read.exitCode === 0) await runGit(root, ['update-index', '-q', '--refresh']); // exit 1: files changed since they were read
  return { exitCode: 0, stdout: `${entries.length} files\n`, stderr: read.exitCode === 0 ? '' : `index not refreshed: ${read.stderr.trim()}` };
}

const NUL = Buffer.from([0]);
/** How much of the fast-import stream is composed before it is written to git. */
const STREAM_PIECE = 1 << 20;

function splitNul(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let start = 0; start < buf.length; ) {
    const end = buf.indexOf(0, start);
    const stop = end < 0 ? buf.length : end;
    if (stop > start) out.push(buf.subarray(start, stop));
    start = stop + 1;
  }
  return out;
}

/**
 * A file as git records it: content and mode, or null for what git leaves out. `file` is
 * its path as bytes (a name need not be UTF-8; fs takes the Buffer as it is).
 */
function readEntry(file: Buffer): { mode: string; data: Buffer } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    // O_NOFOLLOW refuses a symlink (ELOOP): recorded as a link, as git does.
    if ((err as NodeJS.ErrnoException).code !== 'ELOOP') return null; // gone since git listed it
    try {
      return fs.lstatSync(file).isSymbolicLink() ? { mode: '120000', data: fs.readlinkSync(file, 'buffer') } : null;
    } catch {
      return null;
    }
  }
  try {
    const st = fs.fstatSync(fd); // the mode of what is read, not of what was there before
    if (!st.isFile()) return null;
    return { mode: (st.mode & 0o100) !== 0 ? '100755' : '100644', data: readOpenFile(fd, st.size) };
  } catch {
    return null; // replaced by something git would not record
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A path as fast-import reads it: C-style quoted when it holds a newline or starts with a
 * double quote (anything else, spaces included, is taken as written).
 */
export function quotePath(p: Buffer | string): Buffer {
  const b = typeof p === 'string' ? Buffer.from(p) : p;
  if (b.indexOf(0x0a) < 0 && b[0] !== 0x22) return b;
  const parts: Buffer[] = [Buffer.from('"')];
  for (const byte of b) parts.push(byte === 0x0a ? Buffer.from('\\n') : byte === 0x22 ? Buffer.from('\\"') : byte === 0x5c ? Buffer.from('\\\\') : Buffer.from([byte]));
  parts.push(Buffer.from('"'));
  return Buffer.concat(parts);
}

function failed(exitCode: number, stderr: string): GitResult {
  return { exitCode, stdout: '', stderr };
}
