import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { bundledFixture } from './fixture-bundles.ts';

/** Children started by a test; any still running when it ends are killed (no leaks). */
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
});

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURES = path.join(REPO, 'test', 'fixtures');

/**
 * Starts `test/fixtures/<name>` as a child process: its compiled bundle when the suite's
 * setup built it (test/helpers/fixture-bundles.ts), else the TypeScript through tsx.
 */
export function startFixture(name: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const bundle = bundledFixture(name);
  const child = spawn(process.execPath, [...(bundle ? [bundle] : ['--import', 'tsx', path.join(FIXTURES, name)]), ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  return child;
}

/** Calls `onLine` for each stdout line; resolves with every line when the child exits. */
export function collectLines(child: ChildProcess, onLine: (line: string) => void = () => undefined) {
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += String(d);
  });
  const rl = readline.createInterface({ input: child.stdout! });
  rl.on('line', (l) => {
    lines.push(l);
    onLine(l);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: string[]; stderr: string }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, lines, stderr }));
  });
  return { lines, exited };
}

/** Runs the `hive` bin as a real process. */
export function runHive(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}) {
  const child = spawn(process.execPath, [path.join(REPO, 'scripts', 'hive.mjs'), ...args], {
    cwd: REPO,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  child.stdin.end(options.input ?? '');
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
