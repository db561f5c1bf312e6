import { Readable } from 'node:stream';

/** Where a command reads and writes; tests pass buffers, the bin passes the process streams. */
export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Resolves when the command should stop (Ctrl-C); long-running commands await it. */
  interrupted: Promise<void>;
}

export function processIO(): CliIO {
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    // `on`, not `once`: execa's signal-exit re-raises a signal when no other listener is
    // left after its own ran, which would kill the process before the graceful stop.
    interrupted: new Promise<void>((resolve) => {
      process.on('SIGINT', () => resolve());
      process.on('SIGTERM', () => resolve());
    }),
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
