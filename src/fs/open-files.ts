import fs from 'node:fs';

/**
 * Bounds the file descriptors a thread keeps open between uses (docs/architecture.md,
 * "Idle agents cost nothing"). Markers, commit logs and inbox segments keep their file open
 * from one write to the next: one system call per write instead of four. Left unbounded
 * that was six descriptors for every agent that ever got a message (its `committed`,
 * `inflight.json`, `state.wal`, the router's inbox segment, `.synced` and `routed`), so a
 * hive of 3,400 agents that had each been sent something reached the usual limit of
 * 20,000 and stopped: routing paused on EMFILE, and nothing freed a descriptor.
 *
 * Each thread has one registry: whatever keeps a descriptor open registers on each use;
 * past the thread's cap the least recently used one is asked to let go. It closes what it
 * holds and opens it again on its next use; one that is in the middle of something (an
 * asynchronous flush on its descriptor) says no and stays.
 */
export interface Reopenable {
  /** Closes the descriptors kept between uses; false when busy (they stay open). */
  closeIdle(): boolean;
}

/** A thread without a cap of its own (the main thread, a CLI): enough for its few files. */
const DEFAULT_CAP = 64;

class OpenFiles {
  /** Insertion order is use order: the first is the least recently used. */
  private readonly held = new Map<Reopenable, true>();
  private cap = DEFAULT_CAP;

  /** `h` holds a descriptor and was just used; lets go of the least recently used past the cap. */
  used(h: Reopenable): void {
    this.held.delete(h);
    this.held.set(h, true);
    const over = this.held.size - this.cap;
    if (over <= 0) return;
    const oldest: Reopenable[] = [];
    for (const k of this.held.keys()) {
      if (oldest.length >= over) break;
      if (k !== h) oldest.push(k);
    }
    for (const k of oldest) {
      this.held.delete(k);
      if (!k.closeIdle()) this.held.set(k, true); // busy: to the back of the line
    }
  }

  /** `h` closed its descriptors. */
  closed(h: Reopenable): void {
    this.held.delete(h);
  }

  setCap(cap: number): void {
    this.cap = Math.max(4, Math.floor(cap));
  }

  get size(): number {
    return this.held.size;
  }
}

/** This thread's registry (a module instance per thread: workers do not share it). */
export const openFiles = new OpenFiles();

let limit: number | null = null;

/** The process's soft limit on open files, read once (Linux: /proc/self/limits; elsewhere 1,024, a cautious guess). */
export function openFilesLimit(): number {
  return (limit ??= readLimit());
}

function readLimit(): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (m) return m[1] === 'unlimited' ? 1 << 20 : Number(m[1]);
  } catch {
    // not Linux
  }
  return 1_024;
}

/**
 * How many kept-open files each thread of a hive may hold: 60 % of the limit (the rest for
 * sockets, logs, reads and the libraries), less 64, split into the router's 40 % and the
 * agent hosts' 40 % in equal shares; the main thread and the memory actors keep the
 * default. At the usual 20,000 and 100 hosts (10,000 agents): 4,774 for the router and 47
 * per host; at 1,024 and 3 hosts: 220 and 73.
 */
export function openFilesCaps(limit: number, agentHosts: number): { router: number; agentHost: number } {
  const budget = Math.max(64, Math.floor(limit * 0.6) - 64);
  return { router: Math.floor(budget * 0.4), agentHost: Math.floor((budget * 0.4) / Math.max(1, agentHosts)) };
}
