import { execFileSync } from 'node:child_process';
import { tempDir } from './temp.ts';

/**
 * Why a small tmpfs cannot be mounted here (null when it can): the disk-full tests fill a
 * file system of their own. Needs root and CAP_SYS_ADMIN (CI runs as root in a container
 * that has it); elsewhere those tests are skipped with this reason.
 */
export function mountProblem(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (mounting a tmpfs needs root; CI runs as root)';
  const probe = tempDir('hive-mount-probe-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
  }
}
