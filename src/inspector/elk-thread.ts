import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { packageRoot } from '../package-files.ts';

/**
 * ELK's layout on a thread of its own, at the lowest priority where the platform lets a
 * thread have one (Linux: nice 19, for this thread only).
 *
 * Why: elkjs runs its layout in the calling thread (its "worker" for Node is an emulation
 * on timers). The inspector lays out every built-in machine when it starts, so a page
 * load does not wait: at the ready of a hive of 10,000 agents that was ~0.4 s of the
 * supervisor's main thread and of one of the two cores, while the first requests came
 * (a --cpu-prof profile of the 1.5 s after ready). Here the main thread only posts the
 * graph and gets the layout back, and the layout takes CPU nobody else wants.
 *
 * The thread starts with the first layout and ends once it has had nothing to do for a
 * moment; it holds the process open only while a layout someone waits for (`hold`) is in
 * flight: the inspector's warm-up does not delay the exit of a hive stopped right after
 * its start. A thread that cannot load elkjs (or start at all) hands its layouts, and every
 * later one, to this thread (as elkjs would do them anyway); one that dies on a layout fails
 * the layouts it had (see `lost`).
 */

interface Elk {
  layout<T>(graph: T): Promise<T>;
}

/** The thread's code (CommonJS, evaluated): elkjs, one layout per message, its priority in each answer. */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const os = require('node:os');
// Linux only: there setpriority() applies to the calling thread; elsewhere to the whole process.
if (process.platform === 'linux') { try { os.setPriority(19); } catch {} }
let nice = null;
try { nice = os.getPriority(); } catch {}
const ELK = require(workerData.elk);
const elk = new ELK();
parentPort.postMessage({ ready: true });
parentPort.on('message', (m) => {
  elk.layout(m.graph).then(
    (laid) => parentPort.postMessage({ id: m.id, laid, nice }),
    (err) => parentPort.postMessage({ id: m.id, error: String((err && err.message) || err) }),
  );
});
`;

/** How long the thread waits for another layout before it ends. */
const IDLE_MS = 2_000;

type Answer = { ready: true } | { id: number; laid: unknown; nice: number | null } | { id: number; error: string };

interface Waiting {
  graph: unknown;
  /** The process waits for this layout (a CLI drawing a file); a warm-up does not. */
  hold: boolean;
  resolve: (laid: unknown) => void;
  reject: (err: Error) => void;
}

let thread: Worker | null = null;
let idle: NodeJS.Timeout | null = null;
let nextId = 1;
const waiting = new Map<number, Waiting>();
let local: Elk | null = null;
/** A thread could not run layouts here: every layout runs in this thread. */
let threadsBroken = false;

/** What the layout thread did in this process (tests, diagnostics). */
export const elkThreadStats = { started: 0, layouts: 0, inThisThread: 0, nice: null as number | null };

/** Resolves modules as the package does (elkjs is its dependency, wherever it is installed). */
const packageRequire = () => createRequire(path.join(packageRoot(), 'package.json'));
const ELK_MODULE = 'elkjs/lib/elk.bundled.js';

/** elkjs in this thread (the fallback). */
function layoutHere<T>(graph: T): Promise<T> {
  elkThreadStats.inThisThread += 1;
  local ??= new (packageRequire()(ELK_MODULE) as new () => Elk)();
  return local.layout(graph);
}

function startThread(): Worker | null {
  try {
    const w = new Worker(THREAD_SOURCE, { eval: true, workerData: { elk: packageRequire().resolve(ELK_MODULE) }, stdout: false, stderr: false });
    elkThreadStats.started += 1;
    let loaded = false;
    w.on('message', (a: Answer) => {
      if ('ready' in a) {
        loaded = true;
        return;
      }
      const job = waiting.get(a.id);
      if (!job) return;
      waiting.delete(a.id);
      if ('error' in a) job.reject(new Error(`ELK layout failed: ${a.error}`));
      else {
        elkThreadStats.layouts += 1;
        elkThreadStats.nice = a.nice;
        job.resolve(a.laid);
      }
      holdIfWaited(w);
      settle(w);
    });
    // A thread that ended before it had loaded elkjs could not run here at all: its
    // layouts, and every later one, are done in this thread. One that ended later ended on
    // one of its layouts (a graph too big for its heap, say, from an agent's machine.json):
    // those fail rather than run again on the supervisor's main thread; the next layout
    // gets a new thread.
    const lost = (err?: unknown) => {
      if (thread !== w) return;
      thread = null;
      const jobs = [...waiting.values()];
      waiting.clear();
      if (!loaded) {
        threadsBroken = true;
        for (const j of jobs) Promise.resolve().then(() => layoutHere(j.graph)).then(j.resolve, j.reject);
      } else {
        const why = err instanceof Error ? err.message : 'it exited';
        for (const j of jobs) j.reject(new Error(`ELK layout failed: its thread ended (${why})`));
      }
    };
    w.on('error', lost);
    w.on('exit', lost);
    return w;
  } catch {
    return null;
  }
}

/** The thread keeps the process alive while a layout someone waits for is in flight. */
function holdIfWaited(w: Worker): void {
  if ([...waiting.values()].some((j) => j.hold)) w.ref();
  else w.unref();
}

/** After an answer: with nothing left the thread ends when it has been idle a moment. */
function settle(w: Worker): void {
  if (waiting.size > 0) return;
  idle = setTimeout(() => {
    idle = null;
    if (thread !== w || waiting.size > 0) return;
    thread = null;
    void w.terminate();
  }, IDLE_MS);
  idle.unref();
}

/**
 * Lays out `graph` with ELK on the layout thread (or here, if it cannot run). `hold`
 * false: the process may exit before the answer (nobody would read it then).
 */
export function layoutOnThread<T>(graph: T, options: { hold?: boolean } = {}): Promise<T> {
  if (idle) clearTimeout(idle);
  idle = null;
  if (!threadsBroken) thread ??= startThread();
  const w = threadsBroken ? null : thread;
  if (!w) return Promise.resolve().then(() => layoutHere(graph));
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    waiting.set(id, { graph, hold: options.hold ?? true, resolve: resolve as (laid: unknown) => void, reject });
    holdIfWaited(w);
    w.postMessage({ id, graph });
  });
}
