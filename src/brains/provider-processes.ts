import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { readJsonFile, writeJsonAtomic } from '../fs/atomic.ts';
import { appendEvent } from '../log/event-log.ts';

/**
 * Provider processes (a command brain's CLI) must not outlive the worker or the supervisor
 * that started them: a turn re-run after a crash would otherwise run beside the original,
 * and a CLI with side effects would act twice. Two measures:
 *
 * 1. each provider is started as `setpriv --pdeathsig SIGKILL -- <command>` (util-linux,
 *    on every Debian): the kernel kills it the moment the thread that started it ends —
 *    a terminated worker, a SIGKILLed supervisor;
 * 2. each runs in its own process group, recorded in `agents/<id>/providers.json` while
 *    it runs; the agent's next start kills every group still recorded (the provider's own
 *    children, which the death signal does not reach, or everything where setpriv is
 *    missing). A pid is only killed when its start time still matches: never a stranger
 *    that got the same pid.
 */

export interface ProviderRecord {
  pid: number;
  /** The process's start time (/proc/<pid>/stat field 22): tells it from a later one with its pid. */
  start: string;
}

const SETPRIV = '/usr/bin/setpriv';

/** The words put before a provider's command so it dies with the thread that started it. */
export function deathSignalPrefix(): string[] {
  return process.platform === 'linux' && fs.existsSync(SETPRIV) ? [SETPRIV, '--pdeathsig', 'SIGKILL', '--'] : [];
}

interface ProcStat {
  state: string;
  pgrp: number;
  start: string;
}

function procStat(pid: number | string): ProcStat | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The fields after the command name (which may hold spaces and ends at the last ')').
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', pgrp: Number(fields[2]), start: fields[19] ?? '' };
}

/** A process's start time, or null when it is gone (or a zombie: dead, only not reaped). */
export function processStart(pid: number): string | null {
  const s = procStat(pid);
  return s && s.state !== 'Z' ? s.start : null;
}

/**
 * The live members of process group `pgid` that started no earlier than its leader did
 * (`leaderStart`): the provider and what it spawned, even once the provider itself is gone,
 * and never a later process that happens to reuse the number.
 */
function groupMembers(pgid: number, leaderStart: string): number[] {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [];
  }
  return pids.flatMap((pid) => {
    const s = procStat(pid);
    return s && s.state !== 'Z' && s.pgrp === pgid && Number(s.start) >= Number(leaderStart) ? [Number(pid)] : [];
  });
}

function ledgerFile(root: string, agentId: string): string {
  return path.join(agentPaths(root, agentId).dir, 'providers.json');
}

function readLedger(root: string, agentId: string): ProviderRecord[] {
  try {
    const list = readJsonFile<ProviderRecord[]>(ledgerFile(root, agentId));
    return Array.isArray(list) ? list.filter((r) => Number.isInteger(r?.pid) && typeof r.start === 'string') : [];
  } catch {
    return [];
  }
}

/** The running providers of one agent, written through as they start and end. */
export class ProviderLedger {
  private readonly running = new Map<number, ProviderRecord>();

  constructor(
    private readonly root: string,
    private readonly agentId: string,
  ) {}

  started(pid: number): void {
    const start = processStart(pid);
    if (start === null) return;
    this.running.set(pid, { pid, start });
    this.save();
  }

  ended(pid: number): void {
    if (this.running.delete(pid)) this.save();
  }

  private save(): void {
    // Not fsynced: the ledger only has to survive a process crash, which the page cache does.
    writeJsonAtomic(ledgerFile(this.root, this.agentId), [...this.running.values()], { durable: false });
  }
}

/** Kills a provider's whole process group (it leads it: started detached). */
export function killGroup(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/**
 * At an agent's start: kills what a previous worker of it left running — every process of
 * each recorded provider's group — and clears the ledger. Returns the pids killed.
 */
export function sweepProviders(root: string, agentId: string): number[] {
  const killed: number[] = [];
  const records = readLedger(root, agentId);
  for (const r of records) {
    for (const pid of groupMembers(r.pid, r.start)) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // gone meanwhile
      }
    }
  }
  if (records.length > 0) fs.rmSync(ledgerFile(root, agentId), { force: true });
  if (killed.length > 0) appendEvent(root, { type: 'provider.killed', agent: agentId, pids: killed, reason: 'left running by a worker that is gone' });
  return killed;
}
