import fs from 'node:fs';
import { execa, execaNode, type ResultPromise } from 'execa';
import { compiledEntry } from '../supervisor/bundle.ts';
import type { GitResult } from './git-exec.ts';

/**
 * A small child process that starts git for this process (`git-process.ts`).
 *
 * Why: starting a program forks the calling process (Node 20's libuv 1.46 uses fork() on
 * Linux). fork copies the page tables of the whole process, worker threads included, and
 * write-protects every page, so the caller blocks and every thread then takes a fault on
 * its next write to each page. Measured from a supervisor of one-worker echo agents
 * (`git rev-parse HEAD`, main-thread block per git started): 100 agents (1.3 GB RSS)
 * 51 ms median, 197 ms max; 400 agents (4.3 GB) 2.1 s. An audit commit starts git three
 * or four times. The audit trail starts the runner when it starts, before any worker: one
 * fork of the supervisor per start while it is small (a runner first started after the
 * ready of 10,000 agents held the main thread ~0.8 s in `spawn`, 2 GB of page tables
 * copied, right when the first requests came); the runner's own forks are cheap, and the
 * supervisor only writes a line of JSON to it per git.
 *
 * Until the runner says it is ready, and after it exits, `git()` runs git directly.
 */

export interface GitRequest {
  id: number;
  cwd: string;
  args: string[];
  input?: string;
  /** Instead of `args`: the repository's first commit, with this message (first-commit.ts). */
  firstCommit?: string;
}

/** What the runner sends back: `ready` once, then one reply per request. */
export type GitRunnerMessage = { type: 'ready' } | { type: 'done'; id: number; result: GitResult } | { type: 'failed'; id: number; error: string };

const RUNNER_OPTIONS = {
  nodeOptions: [] as string[],
  ipc: true,
  serialization: 'json',
  stdin: 'ignore',
  stdout: 'ignore',
  stderr: 'inherit',
  reject: false,
  // Replies are handled as they come; execa would otherwise keep every one of them (each
  // git's stdout and stderr) for the runner's whole life.
  buffer: { ipc: false },
  // The runner exits by itself when this process goes (its channel closes); git commits
  // it started are left to finish (a killed commit leaves index.lock behind).
  cleanup: false,
} as const;

export class GitRunner {
  private ready = false;
  private nextId = 1;
  private markReady!: (up: boolean) => void;
  /** Resolves true when the runner reported ready, false if it went away first. */
  readonly up = new Promise<boolean>((resolve) => (this.markReady = resolve));
  private readonly waiting = new Map<number, { resolve: (r: GitResult | null) => void; reject: (e: Error) => void }>();

  private constructor(private readonly child: ResultPromise<typeof RUNNER_OPTIONS>) {
    child.on('message', (m: GitRunnerMessage) => this.onMessage(m));
    // Whatever ends it (exit, kill, failed start): requests in flight fall back to a
    // direct run (null), later ones never come here.
    child.then(
      () => this.gone(),
      () => this.gone(),
    );
    // Only a runner that is starting or answering keeps this process alive; an idle one
    // does not (the channel is unref'd once it is ready, and between requests).
    child.unref();
  }

  /**
   * Starts the runner process; `git()` uses it once it reports ready. Where `nice(1)` is
   * there, the runner runs at nice 19 from its first instruction: it starts with the
   * trail, while the workers boot, and its own boot must not take their CPU (it lowers
   * its priority itself too, but only once it has loaded).
   */
  static async start(): Promise<GitRunner> {
    const file = await compiledEntry('git-process');
    const nice = niceCommand();
    if (!nice) return new GitRunner(execaNode(file, [], RUNNER_OPTIONS));
    const { nodeOptions: _none, ...options } = RUNNER_OPTIONS;
    // The same child as execaNode's (node, the runner file, an IPC channel), with nice in front.
    return new GitRunner(execa(nice, ['-n', '19', process.execPath, file], options) as unknown as ResultPromise<typeof RUNNER_OPTIONS>);
  }

  get alive(): boolean {
    return this.ready;
  }

  /** The runner's process id (the parent of every git it starts). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Runs git through the runner; null when the runner is not (or no longer) there. */
  run(cwd: string, args: string[], options: { input?: string } = {}): Promise<GitResult | null> {
    return this.request({ cwd, args, ...(options.input !== undefined ? { input: options.input } : {}) });
  }

  /** Writes the repository's first commit as one pack (first-commit.ts); null when the runner is not there. */
  firstCommit(cwd: string, message: string): Promise<GitResult | null> {
    return this.request({ cwd, args: [], firstCommit: message });
  }

  private request(what: Omit<GitRequest, 'id'>): Promise<GitResult | null> {
    // A channel can close before the runner's exit is seen.
    if (!this.ready || !this.child.connected) return Promise.resolve(null);
    const id = this.nextId++;
    const request: GitRequest = { id, ...what };
    return new Promise<GitResult | null>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // A request in flight keeps this process alive until its answer (an idle runner does not).
      if (this.waiting.size === 1) this.child.channel?.ref();
      // A send that fails answers through the callback (without one, Node would emit
      // 'error' on the subprocess).
      this.child.send(request, (err) => {
        if (err) this.settle(id)?.resolve(null);
      });
    });
  }

  /** Lets the runner exit (it finishes the gits it started first). */
  stop(): void {
    this.ready = false;
    if (this.child.connected) this.child.disconnect();
  }

  private onMessage(m: GitRunnerMessage): void {
    if (m.type === 'ready') {
      this.ready = true;
      this.markReady(true);
      if (this.waiting.size === 0) this.child.channel?.unref();
      return;
    }
    const w = this.settle(m.id);
    if (!w) return;
    if (m.type === 'done') w.resolve(m.result);
    else w.reject(new Error(m.error));
  }

  private settle(id: number) {
    const w = this.waiting.get(id);
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.child.channel?.unref();
    return w;
  }

  private gone(): void {
    this.ready = false;
    this.markReady(false);
    for (const id of [...this.waiting.keys()]) this.settle(id)?.resolve(null);
  }
}

/** `nice(1)` where this platform has it at a usual place; null elsewhere. */
function niceCommand(): string | null {
  if (process.platform === 'win32') return null;
  for (const p of ['/usr/bin/nice', '/bin/nice']) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

/** The process's runner, shared by every audit trail in it (tests run several hives). */
let shared: { runner: Promise<GitRunner | null>; users: number } | null = null;
let current: GitRunner | null = null;

/** A use of the process's runner: `ready` resolves true once it answers, false if it cannot. */
export interface GitRunnerLease {
  ready: Promise<boolean>;
  release(): void;
}

/**
 * Starts (or joins) this process's git runner; call `release()` when done.
 * Never throws: a runner that cannot start leaves `git()` running git directly.
 */
export function acquireGitRunner(): GitRunnerLease {
  if (!shared) {
    const starting: { runner: Promise<GitRunner | null>; users: number } = { runner: Promise.resolve(null), users: 0 };
    starting.runner = GitRunner.start().then(
      (r) => {
        if (shared === starting) current = r;
        else r.stop(); // every user left while it was starting
        return r;
      },
      () => null,
    );
    shared = starting;
  }
  const mine = shared;
  mine.users += 1;
  let released = false;
  return {
    ready: mine.runner.then((r) => r?.up ?? false),
    release: () => {
      if (released) return;
      released = true;
      mine.users -= 1;
      if (mine.users > 0 || shared !== mine) return;
      shared = null;
      current?.stop();
      current = null;
    },
  };
}

/** The runner this process started or is starting, once spawned (tests). */
export async function startedGitRunner(): Promise<GitRunner | null> {
  return shared ? shared.runner : null;
}

/** The runner `git()` should use now, if one is up. */
export function currentGitRunner(): GitRunner | null {
  return current?.alive ? current : null;
}
