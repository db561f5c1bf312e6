import { appendLines } from '../fs/append-lines.ts';
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
  try {
    appendLines(hivePaths(root).log, `${JSON.stringify(line)}\n`);
  } catch {
    // The hive root may be gone (tests tearing down); logging is best-effort.
  }
}

/** Appends several events with one write (a routing pass logs one line per message). */
export function appendEvents(root: string, events: HiveEvent[], now: Date = new Date()): void {
  if (events.length === 0) return;
  const at = now.toISOString();
  const text = events.map((e) => `${JSON.stringify({ at, pid: process.pid, ...e } satisfies LoggedEvent)}\n`).join('');
  try {
    appendLines(hivePaths(root).log, text);
  } catch {
    // best-effort, as appendEvent
  }
}
