import { Readable } from 'node:stream';
import { colourWanted } from './colour.ts';

/** Where a command reads and writes; tests pass buffers, the bin passes the process streams. */
export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Resolves when the command should stop (Ctrl-C); long-running commands await it. */
  interrupted: Promise<void>;
  /** Colour what goes to out / err (a TTY, no NO_COLOR: src/cli/colour.ts). */
  colour?: { out: boolean; err: boolean };
}

/**
 * Every output of a real process. A reader that goes away (`hive log | head`) closes the
 * pipe: from then on output is dropped and the command is asked to stop as if interrupted
 * (a long-running one stops gracefully), as Unix tools do, instead of dying with an
 * EPIPE stack trace.
 */
export function processIO(): CliIO {
  let stop: () => void = () => undefined;
  const interrupted = new Promise<void>((resolve) => {
    stop = resolve;
    // `on`, not `once`: execa's signal-exit re-raises a signal when no other listener is
    // left after its own ran, which would kill the process before the graceful stop.
    process.on('SIGINT', () => resolve());
    process.on('SIGTERM', () => resolve());
  });
  const closed = { stdout: false, stderr: false };
  for (const name of ['stdout', 'stderr'] as const) {
    process[name].on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      closed[name] = true;
      stop();
    });
  }
  return {
    out: (t) => void (closed.stdout || process.stdout.write(t)),
    err: (t) => void (closed.stderr || process.stderr.write(t)),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    interrupted,
    colour: { out: colourWanted(process.stdout.isTTY, process.env), err: colourWanted(process.stderr.isTTY, process.env) },
  };
}

/** An IO that records output, for tests. */
export function memoryIO(input = '', env: NodeJS.ProcessEnv = {}, cwd = process.cwd()) {
  let stdout = '';
  let stderr = '';
  let interrupt: () => void = () => undefined;
  const io: CliIO = {
    out: (t) => {
      stdout += t;
    },
    err: (t) => {
      stderr += t;
    },
    stdin: Readable.from([input]),
    env,
    cwd,
    interrupted: new Promise<void>((resolve) => {
      interrupt = resolve;
    }),
  };
  return {
    io,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    interrupt: () => interrupt(),
  };
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
