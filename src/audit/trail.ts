import { appendEvent } from '../log/event-log.ts';
import { errorMessage } from '../errors.ts';
import { ensureRepo, firstCommit, git } from './git.ts';
import { acquireGitRunner, type GitRunnerLease } from './git-runner.ts';
import { recoverIndexLock } from './index-lock.ts';

/** How long a commit waits for a git runner that is still starting. */
const RUNNER_WAIT_MS = 1_000;

export interface AuditOptions {
  /** At most one commit per this many ms. */
  intervalMs: number;
  /** Wait this long after the first change of a quiet period, so a burst lands in one commit. */
  settleMs?: number;
  /** Look for changes made by other tools this often even when nothing was noted. */
  sweepMs?: number;
}

export interface AuditCommit {
  commit: string;
  reasons: string[];
}

/**
 * The git audit trail of a hive root (docs/architecture.md, "Observability"). Significant changes are `note()`d
 * with a reason; commits happen asynchronously, in batches, at most one per
 * `intervalMs`, one git process at a time. Nothing here blocks an actor: actors run
 * in worker threads, and the main thread only starts git processes and awaits them.
 * A change that git finds to be no change (e.g. a turn that did not touch memory.md)
 * costs one `git add` and no commit.
 */
export class AuditTrail {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private sweep: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private busy = false;
  private lastCommitAt = 0;
  private firstPendingAt = 0;
  private closed = false;
  private ready = false;
  private held = false;
  private readonly listeners = new Set<(c: AuditCommit) => void>();
  private runner: GitRunnerLease | null = null;
  private closing = false;
  /** Commits made by this trail (for tests and status). */
  commits = 0;
  /** The repository has a commit (known once seen: the first commit is the only one imported). */
  private hasHead = false;

  constructor(
    readonly root: string,
    private readonly o: AuditOptions,
  ) {}

  /** Creates or checks the repository and commits what is already there. */
  async start(): Promise<void> {
    await ensureRepo(this.root);
    // The git runner (git-runner.ts) starts now, while this process is small: started by
    // the first commit, after the ready of 10,000 agents, its fork held the main thread
    // ~0.8 s and write-protected 2 GB under every thread just as requests came. It boots
    // at nice 19, so the workers starting meanwhile keep the CPU.
    this.runner ??= acquireGitRunner();
    this.ready = true;
    this.note('hive started');
    const sweepMs = this.o.sweepMs ?? 30_000;
    this.sweep = setInterval(() => this.note('changes on disk'), sweepMs);
    this.sweep.unref();
  }

  /**
   * No commit starts until `release()` (an explicit `flush()` still commits). A starting
   * hive holds its first commit: a git process forked from a supervisor that is spawning
   * a hundred workers costs them CPU, and the files are not all there yet anyway.
   */
  hold(): void {
    this.held = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Commits may start again, the first one a settle period from now (not at once: a hive
   * that just became ready is answering its first messages). */
  release(): void {
    this.held = false;
    if (this.pending.length > 0) {
      this.firstPendingAt = Date.now();
      this.schedule();
    }
  }

  /**
   * Records that something significant changed; it will be committed soon. Note a change
   * before writing it (and again after, when the write takes a while): a commit already
   * running names reasons noted during its `git add`, not ones noted after it, and it may
   * still pick the files up — the later commit would then be empty and its reason lost.
   */
  note(reason: string): void {
    if (this.closed) return;
    if (!this.pending.includes(reason)) {
      if (this.pending.length >= 500) this.pending.shift();
      this.pending.push(reason);
    }
    if (this.firstPendingAt === 0) this.firstPendingAt = Date.now();
    this.schedule();
  }

  /** True while a commit is scheduled (a timer armed): never while held. */
  get scheduled(): boolean {
    return this.timer !== null;
  }

  onCommitted(listener: (c: AuditCommit) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Commits everything pending now (waits for a running commit first). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.running.then(() => this.commitNow());
    return this.running;
  }

  /** Final commit, then no more. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.sweep) clearInterval(this.sweep);
    if (this.ready && this.pending.length > 0) await this.flush();
    else await this.running;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.runner?.release();
    this.runner = null;
  }

  private schedule(): void {
    if (this.timer || this.busy || !this.ready || this.held) return;
    const now = Date.now();
    const at = Math.max(this.lastCommitAt + this.o.intervalMs, this.firstPendingAt + (this.o.settleMs ?? 200));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.running.then(() => this.commitNow());
    }, Math.max(0, at - now));
    this.timer.unref();
  }

  /** The first commit as one pack; false when it could not be made that way (logged; the caller adds and commits). */
  private async importFirst(reasons: string[]): Promise<boolean> {
    const { subject, body } = describe(reasons);
    const r = await firstCommit(this.root, `${subject}\n\n${body}`);
    if (r === null) return false;
    // 2: the import declined (gitattributes, autocrlf, a nested repository: git add knows best).
    if (r.exitCode === 1) appendEvent(this.root, { type: 'audit.import-failed', error: r.stderr.trim() });
    return r.exitCode === 0;
  }

  private async commitNow(): Promise<void> {
    if (this.pending.length === 0 || !this.ready) return;
    this.busy = true;
    let reasons = this.pending;
    this.pending = [];
    this.firstPendingAt = 0;
    try {
      // Commits start git through the git runner started with the trail. A commit waits
      // for it while it is still starting rather than forking git from the supervisor
      // meanwhile; a runner that cannot start is not waited for, nor by the last commit of
      // a trail closing (a start that failed does not wait for a runner to boot).
      if (this.runner && !this.closing) await Promise.race([this.runner.ready, new Promise((r) => setTimeout(r, RUNNER_WAIT_MS).unref())]);
      const lock = recoverIndexLock(this.root);
      if (lock === 'recovered') appendEvent(this.root, { type: 'audit.lock-recovered', file: '.git/index.lock' });
      if (lock === 'busy') {
        // Another git is working on this repository: keep the reasons and come back later.
        this.pending.unshift(...reasons.filter((r) => !this.pending.includes(r)));
        this.firstPendingAt = Date.now();
        this.lastCommitAt = Date.now();
        return;
      }
      // A repository without a commit yet (a new hive, all its agents' files at once) gets
      // its first commit as one pack (src/audit/first-commit.ts); if that cannot be done,
      // the usual add and commit.
      this.hasHead ||= (await git(this.root, ['rev-parse', '--verify', '-q', 'HEAD'])).exitCode === 0;
      const imported = !this.hasHead && (await this.importFirst(reasons));
      if (!imported) {
        const add = await git(this.root, ['add', '-A']);
        if (add.exitCode !== 0) throw new Error(`git add: ${add.stderr.trim()}`);
      }
      // Changes noted while `git add` (or the import) ran may be in this commit or not
      // (written just before or just after it read them): name them here, and keep them for
      // the next commit too, so their reason is on whichever commit holds the change.
      const duringAdd = this.pending.filter((r) => !reasons.includes(r));
      reasons = [...reasons, ...duringAdd];
      if (!imported) {
        const diff = await git(this.root, ['diff', '--cached', '--quiet']);
        if (diff.exitCode === 0) return; // nothing changed in tracked files
        const { subject, body } = describe(reasons);
        const c = await git(this.root, ['commit', '-q', '--no-verify', '--no-gpg-sign', '-m', subject, '-m', body]);
        if (c.exitCode !== 0) throw new Error(`git commit: ${(c.stderr || c.stdout).trim()}`);
      }
      const head = (await git(this.root, ['rev-parse', 'HEAD'])).stdout.trim();
      this.commits += 1;
      this.lastCommitAt = Date.now();
      appendEvent(this.root, { type: 'audit.committed', commit: head, reasons: reasons.length, ...(imported ? { imported: true } : {}) });
      for (const l of this.listeners) {
        try {
          l({ commit: head, reasons });
        } catch {
          // a listener must not break the trail
        }
      }
    } catch (err) {
      this.lastCommitAt = Date.now();
      appendEvent(this.root, { type: 'audit.failed', error: errorMessage(err) });
    } finally {
      this.busy = false;
      if (this.pending.length > 0 && !this.closed) this.schedule();
    }
  }
}

/** A commit's message: the first reasons as its subject, up to 50 of them as its body. */
function describe(reasons: string[]): { subject: string; body: string } {
  const subject = `hive: ${summarize(reasons)}`;
  const body = [...reasons].sort((a, b) => weight(a) - weight(b)).slice(0, 50).map((r) => `- ${r}`).join('\n') + (reasons.length > 50 ? `\n- … ${reasons.length - 50} more` : '');
  return { subject, body };
}

/** Routine reasons (a turn that may have touched memory, the periodic sweep) go last. */
function weight(reason: string): number {
  return reason.startsWith('turn of ') ? 1 : reason === 'changes on disk' ? 2 : 0;
}

/** "spawned late; question 01… from writer; turn of writer; +3 more" */
export function summarize(reasons: string[]): string {
  const sorted = [...reasons].sort((a, b) => weight(a) - weight(b));
  const shown = sorted.slice(0, 3).join('; ');
  return sorted.length > 3 ? `${shown}; +${sorted.length - 3} more` : shown;
}
