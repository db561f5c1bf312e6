import fs from 'node:fs';
import path from 'node:path';

/**
 * Named points inside each atomic step, one per line of its crash-order header
 * (src/agent/commit.ts, src/queue/inbox-writer.ts, src/router/route.ts,
 * src/queue/dead-letter.ts; cluster mode: AgentActor.saveConversation). A test arms one (through createHive's `testing` option,
 * carried to the worker threads in their init data): the thread that reaches it writes
 * `<root>/crash-point.reached` and stops there for good, so the test can SIGKILL the
 * process exactly in that window. Unarmed, as in production, a point is one comparison.
 */
export const CRASH_POINTS = [
  'commit.before-wal',
  'commit.before-mark',
  'commit.after-wal',
  'deliver.after-append',
  'deliver.after-sync',
  'route.after-deliveries',
  'route.before-settle',
  'dead-letter.after-reason',
] as const;

/** Points only a cluster machine reaches (test/cluster.test.ts kills one at each). */
export const CLUSTER_CRASH_POINTS = ['conversation.before-save'] as const;

export type CrashPointName = (typeof CRASH_POINTS)[number] | (typeof CLUSTER_CRASH_POINTS)[number];

/** The file a thread that reached the armed point writes (its content: the point's name). */
export const CRASH_POINT_REACHED = 'crash-point.reached';

let armed: { name: CrashPointName; root: string } | null = null;

/** Arms `name` in this thread (tests only). */
export function armCrashPoint(name: CrashPointName, root: string): void {
  armed = { name, root };
}

/** Marks a point of a crash-order header; stops the thread here when a test armed it. */
export function crashPoint(name: CrashPointName): void {
  if (armed === null || armed.name !== name) return;
  const file = path.join(armed.root, CRASH_POINT_REACHED);
  fs.writeFileSync(`${file}.tmp`, name);
  fs.renameSync(`${file}.tmp`, file); // whole, or not there: the test reads it as soon as it appears
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // for good: the test kills the process
}
