import { appendLines, appendLinesMovingAside } from '../fs/append-lines.ts';
import { hivePaths } from '../layout/paths.ts';

/** One line of `log.jsonl`. `type` is a dotted name such as `message.routed`. */
export interface HiveEvent {
  type: string;
  agent?: string;
  [key: string]: unknown;
}

export interface LoggedEvent extends HiveEvent {
  at: string;
  pid: number;
}

/**
 * Appends one event to `<root>/log.jsonl`. O_APPEND keeps concurrent writers from
 * interleaving inside a line. Not fsynced: the log observes, the queues are the truth.
 * Never throws: a failing log must not break the runtime.
 * @example appendEvent(root, { type: 'message.routed', id, from: 'a', to: 'b' })
 */
export function appendEvent(root: string, event: HiveEvent, now: Date = new Date()): void {
  const line: LoggedEvent = { at: now.toISOString(), pid: process.pid, ...event };
  if (gathering?.root === root) {
    gathering.lines.push(`${JSON.stringify(line)}\n`);
    return;
  }
  try {
    writeLog(root, `${JSON.stringify(line)}\n`);
  } catch {
    // The hive root may be gone (tests tearing down); logging is best-effort.
  }
}

/**
 * Appends to `log.jsonl`. Something else under its name (a symlink, a FIFO: the hive folder
 * is shared) is never written through or waited on: it is moved aside
 * (`appendLinesMovingAside`), and a `log.moved-aside` line in the new log says what was
 * found and where it went.
 */
function writeLog(root: string, text: string): void {
  const file = hivePaths(root).log;
  const moved = appendLinesMovingAside(file, text);
  if (moved) appendLines(file, `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, type: 'log.moved-aside', ...moved } satisfies LoggedEvent)}\n`);
}

/** Appends several events with one write (a routing pass logs one line per message). */
export function appendEvents(root: string, events: HiveEvent[], now: Date = new Date()): void {
  if (events.length === 0) return;
  const at = now.toISOString();
  const text = events.map((e) => `${JSON.stringify({ at, pid: process.pid, ...e } satisfies LoggedEvent)}\n`).join('');
  try {
    writeLog(root, text);
  } catch {
    // best-effort, as appendEvent
  }
}

let gathering: { root: string; lines: string[] } | null = null;

/**
 * Runs `fn` with this thread's `appendEvent` lines for `root` gathered and written with one
 * append when it ends (returns or throws). A pooled host starting 100 agents logged two lines
 * for each, and the appends of a hundred threads to one file wait on each other (the file's
 * lock): at 10,000 agents those were most of the writes of the start.
 */
export async function gatherEvents<T>(root: string, fn: () => Promise<T>): Promise<T> {
  if (gathering !== null) return fn();
  gathering = { root, lines: [] };
  try {
    return await fn();
  } finally {
    const { lines } = gathering;
    gathering = null;
    if (lines.length > 0) {
      try {
        writeLog(root, lines.join(''));
      } catch {
        // best-effort, as appendEvent
      }
    }
  }
}
