import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { hivePaths } from '../layout/paths.ts';
import { appendEvent } from './event-log.ts';
import { listRotatedLogs, rotatedLogName } from './files.ts';
import { lockFs } from '../lock/lock-fs.ts';

export interface RotationPolicy {
  /** Rotate once `log.jsonl` is larger than this many bytes. */
  maxBytes: number;
  /** Rotated files to keep. */
  keep: number;
}

/**
 * Rotates `log.jsonl` when it passed its cap. Writers (every worker thread, the CLI)
 * append by path with O_APPEND and never hold the file open, so a rename is all a
 * rotation needs: the next append creates a fresh `log.jsonl`.
 *
 * Only one rotator runs at a time: the supervisor calls this from its main thread, under
 * `log.jsonl.rotate.lock` (proper-lockfile) so a second process (a tool, a stale
 * supervisor) cannot rotate concurrently. Steps, and what a crash leaves:
 *   1. stat: below the cap → nothing to do
 *   2. take the lock (busy → skip this round)
 *   3. rename log.jsonl → log-<max+1>.jsonl   (atomic: the log is either live or rotated)
 *   4. delete the oldest rotated files beyond `keep`   (a crash leaves extras; pruned next time)
 *   5. release the lock
 * Returns the rotated file, or null when nothing was rotated.
 * @example rotateLogIfNeeded(root, { maxBytes: 10 << 20, keep: 5 })
 */
export async function rotateLogIfNeeded(root: string, policy: RotationPolicy): Promise<string | null> {
  const live = hivePaths(root).log;
  let size: number;
  try {
    size = fs.statSync(live).size;
  } catch {
    return null;
  }
  if (size <= policy.maxBytes) return null;
  let release: (() => Promise<void>) | null = null;
  try {
    release = await lockfile.lock(live, { fs: lockFs, lockfilePath: `${live}.rotate.lock`, realpath: false, stale: 10_000, retries: 0 });
  } catch {
    return null; // someone else is rotating
  }
  try {
    const rotated = listRotatedLogs(root);
    const next = (rotated.at(-1)?.n ?? 0) + 1;
    const target = path.join(path.dirname(live), rotatedLogName(next));
    try {
      fs.renameSync(live, target);
    } catch {
      return null;
    }
    const all = [...rotated, { n: next, file: target }];
    for (const old of all.slice(0, Math.max(0, all.length - policy.keep))) fs.rmSync(old.file, { force: true });
    appendEvent(root, { type: 'log.rotated', file: path.basename(target), bytes: size });
    return target;
  } finally {
    await release().catch(() => undefined);
  }
}

/**
 * Checks the log size every `checkMs` on the calling (main) thread; the cap is therefore
 * approximate: the log may pass it by what is written within one period.
 */
export function startLogRotation(root: string, policy: RotationPolicy & { checkMs: number }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => rotateLogIfNeeded(root, policy)).catch(() => undefined);
  }, policy.checkMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
