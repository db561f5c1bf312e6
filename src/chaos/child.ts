import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { HiveError } from '../errors.ts';
import { hiveBin } from '../package-files.ts';

const BIN = hiveBin();

export interface ChildEvent {
  event: string;
  at: string;
  [key: string]: unknown;
}

/** The hive under chaos (`hive start --json`), as a process the engine can SIGKILL and start again. */
export class ChaosChild {
  private proc: ChildProcess | null = null;
  private listeners = new Set<(e: ChildEvent) => void>();
  readonly events: ChildEvent[] = [];
  stderr = '';

  /** `baseArgs`: extra `hive start` flags for every start (a planted bug: `--test-plant`). */
  constructor(
    private readonly configFile: string,
    private readonly baseArgs: string[] = [],
    /** A command line to run it under (`ip netns exec <ns>`: a machine of `hive chaos --machines`). */
    private readonly wrap: string[] = [],
  ) {}

  /** Starts the supervisor and resolves at its ready line (every actor restored, routing). */
  async start(extraArgs: string[] = [], timeoutMs = 30_000): Promise<number> {
    const t0 = Date.now();
    // The real `hive start`, in machine-readable mode: what an operator would run.
    const [cmd, ...pre] = [...this.wrap, process.execPath];
    const proc = spawn(cmd!, [...pre, BIN, 'start', '--config', this.configFile, '--json', '--quiet', '--test-fault-ops', ...this.baseArgs, ...extraArgs], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    proc.stderr!.on('data', (d) => {
      this.stderr = (this.stderr + String(d)).slice(-20_000);
    });
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      let e: ChildEvent;
      try {
        e = JSON.parse(line);
      } catch {
        return;
      }
      this.events.push(e);
      for (const l of this.listeners) l(e);
    });
    await this.waitFor((e) => e.event === 'ready', timeoutMs, 'the supervisor to be ready', proc);
    return Date.now() - t0;
  }

  /** Resolves with the first event (from now on) that matches. */
  waitFor(match: (e: ChildEvent) => boolean, timeoutMs: number, what: string, proc = this.proc): Promise<ChildEvent> {
    return new Promise((resolve, reject) => {
      const done = (err: Error | null, e?: ChildEvent) => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        proc?.off('exit', onExit);
        if (err) reject(err);
        else resolve(e!);
      };
      const listener = (e: ChildEvent) => match(e) && done(null, e);
      const onExit = (code: number | null, signal: string | null) =>
        done(new HiveError('E_WORKER', `the hive process exited (code ${code}, signal ${signal}) while waiting for ${what}\n${this.stderr.slice(-2_000)}`));
      const timer = setTimeout(() => done(new HiveError('E_TIMEOUT', `timed out after ${timeoutMs} ms waiting for ${what}${this.stderr ? `\n${this.stderr.slice(-2_000)}` : ''}`)), timeoutMs);
      this.listeners.add(listener);
      proc?.once('exit', onExit);
    });
  }

  /** SIGKILL: no cleanup of any kind runs. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    this.proc = null;
  }

  /** SIGTERM: graceful stop; resolves with the exit code and the final status line. */
  /**
   * SIGTERM, then the final status and the exit. A child that has not exited within
   * `timeoutMs` is SIGKILLed (`killed`): a stop that hangs must fail the run, not hang it.
   */
  async stop(timeoutMs = 30_000): Promise<{ code: number | null; status: ChildEvent | null; killed?: boolean }> {
    const proc = this.proc;
    if (!proc) return { code: null, status: null };
    const status = this.waitFor((e) => e.event === 'status', timeoutMs, 'the final status').catch(() => null);
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    proc.kill('SIGTERM');
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      proc.kill('SIGKILL');
    }, timeoutMs);
    const [s, code] = await Promise.all([status, exited]);
    clearTimeout(timer);
    this.proc = null;
    return killed ? { code, status: s, killed } : { code, status: s };
  }

  get pid(): number | null {
    return this.proc?.pid ?? null;
  }
}
