import fs from 'node:fs';
import path from 'node:path';

/**
 * A crash of git (or of the machine) can leave `.git/index.lock` behind; every later
 * `git add` then fails with "Unable to create index.lock: File exists". The lock is
 * removed only when no git process is running for this repository: on Linux by
 * scanning /proc for git processes whose working directory (or `-C` argument) is inside
 * the hive root; elsewhere only when the lock is older than `staleMs`.
 */

function gitProcessesIn(root: string): number[] | null {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return null; // no /proc: cannot tell
  }
  const inside = (p: string) => p === root || p.startsWith(root + path.sep);
  const found: number[] = [];
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    try {
      const comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (comm !== 'git' && !comm.startsWith('git-')) continue;
      // A zombie (exited, not yet reaped by its busy parent) holds no lock and has no cwd.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      let cwd = '';
      try {
        cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        cwd = '';
      }
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const c = argv.indexOf('-C');
      const target = c >= 0 && argv[c + 1] ? path.resolve(cwd || '/', argv[c + 1]!) : cwd;
      // A git process we cannot inspect (no cwd) might be ours: count it, stay safe.
      if (target === '' || inside(target)) found.push(Number(pid));
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

export type LockRecovery = 'none' | 'recovered' | 'busy';

/**
 * Removes a stale `.git/index.lock` of the repository at `root`.
 * 'none': there was no lock; 'recovered': it was stale and is gone; 'busy': a git
 * process is running for this repository (try again later).
 * @example if ((await recoverIndexLock(root)) === 'busy') retryLater();
 */
export function recoverIndexLock(root: string, staleMs = 60_000, now = Date.now()): LockRecovery {
  const lock = path.join(root, '.git', 'index.lock');
  let st: fs.Stats;
  try {
    st = fs.statSync(lock);
  } catch {
    return 'none';
  }
  const running = gitProcessesIn(path.resolve(root));
  if (running === null ? now - st.mtimeMs < staleMs : running.length > 0) return 'busy';
  try {
    fs.rmSync(lock, { force: true });
  } catch {
    return 'busy';
  }
  return 'recovered';
}
