import { spawn } from 'node:child_process';

/** A start that made at least this many agent folders asks for their write-out at once. */
export const WRITE_BACK_AFTER_MADE = 500;

/**
 * Starts the kernel writing out the hive's file system now (`sync -f`: syncfs(2)) and does
 * not wait for it. A start that made 10,000 agents' folders leaves ~340 MiB of metadata
 * dirty in the page cache; the kernel writes it out 30 s after it was dirtied, which fell
 * a few seconds after ready, and requests routed meanwhile took 150–180 ms (their flushes
 * queued behind it; a scratch trace of /proc/meminfo beside each request's legs). Started
 * right after the ensure step, the write-out overlaps the workers' start instead. Linux
 * only (elsewhere `sync` takes no file system); best effort: a `sync` that cannot start
 * changes nothing.
 */
export function startWriteBack(root: string): void {
  if (process.platform !== 'linux') return;
  try {
    const child = spawn('sync', ['-f', root], { stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // no sync(1): the kernel writes it out on its own schedule
  }
}
