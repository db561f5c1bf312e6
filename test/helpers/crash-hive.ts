import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { collectLines, startFixture } from './fixture.ts';
import { hivePaths } from '../../src/layout/paths.ts';
import { listInbox } from '../../src/queue/inbox.ts';
import type { HiveMessage } from '../../src/protocol/message.ts';
import type { CrashPointName } from '../../src/testing/crash-point.ts';

/** Drives test/fixtures/crash-hive.ts: a hive in its own process, to SIGKILL and start again. */

export interface Run {
  child: ChildProcess;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

export function start(root: string, crashAt: CrashPointName | '-', brain: 'counter' | 'cli' | 'sleepy' | 'crashy' = 'counter'): Promise<Run> {
  const child = startFixture('crash-hive.ts', [root, crashAt, brain]);
  return new Promise((resolve, reject) => {
    const { exited } = collectLines(child, (line) => {
      if (line.startsWith('ready ')) resolve({ child, pid: Number(line.slice(6)), exited });
    });
    void exited.then((x) => reject(new Error(`hive exited before ready: ${x.code} ${x.signal} ${x.stderr}`)));
  });
}

/** Waits for `check`; on a timeout the error carries `explain()` (what the hive was doing) when given. */
export async function until(check: () => boolean, what: string, timeoutMs = 30_000, explain?: () => string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${explain ? `\n${explain()}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The end of a hive's event log and what its agent `counter` holds: for a timeout's message. */
export function hiveState(root: string): string {
  const tail = (f: string, n: number) => {
    try {
      return fs.readFileSync(f, 'utf8').trim().split('\n').slice(-n).join('\n');
    } catch (err) {
      return `(${(err as Error).message})`;
    }
  };
  const dir = path.join(root, 'agents', 'counter');
  const files = (d: string) => {
    try {
      return fs.readdirSync(d).join(' ');
    } catch {
      return '(none)';
    }
  };
  // The provider processes the ledger names, as /proc sees them (a turn waiting on one).
  const providers = (() => {
    try {
      const list = JSON.parse(fs.readFileSync(path.join(dir, 'providers.json'), 'utf8')) as { pid: number }[];
      return list.map((r) => {
        try {
          const status = fs.readFileSync(`/proc/${r.pid}/status`, 'utf8').split('\n').filter((l) => /^(State|PPid|SigBlk|SigIgn)/.test(l)).join(', ');
          const cmd = fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').split('\0').join(' ').slice(0, 200);
          return `${r.pid}: ${status}; ${cmd}`;
        } catch {
          return `${r.pid}: gone`;
        }
      }).join('\n  ');
    } catch (err) {
      return `(${(err as Error).message})`;
    }
  })();
  return [`log.jsonl, last lines:\n${tail(path.join(root, 'log.jsonl'), 25)}`, `counter/: ${files(dir)}`, `counter/inbox/: ${files(path.join(dir, 'inbox'))}`, `inflight.json: ${tail(path.join(dir, 'inflight.json'), 1)}`, `inbox/.synced: ${tail(path.join(dir, 'inbox', '.synced'), 1)}`, `providers.json:\n  ${providers}`, `pids: ${tail(path.join(root, 'pids'), 8)}`].join('\n');
}

export function replies(root: string): HiveMessage[] {
  return listInbox(root, 'client').flatMap((e) => e.message ?? []);
}

export function logged(root: string, type: string, pid: number): Record<string, unknown>[] {
  return fs
    .readFileSync(hivePaths(root).log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .filter((e) => e.type === type && e.pid === pid);
}

/** A process that still runs (a zombie is dead: only not reaped yet). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

