import path from 'node:path';
import type { HiveConfig } from '../config/schema.ts';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { listDir, readJsonFile, sweepTempFiles, writeJsonAtomic } from '../fs/atomic.ts';
import { realSubfolders } from '../fs/regular-file.ts';
import { sweepDeadIntents } from '../lock/owner.ts';
import { appendEvent } from '../log/event-log.ts';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { stableId } from '../protocol/ids.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { holdsLegacyNames, migrateInbox } from '../queue/inbox-migrate.ts';
import { reconcileInbox } from '../queue/inbox-reconcile.ts';

/**
 * Startup sweep: temp files left by a crash, in every folder Hive writes atomically, and
 * inboxes of the file-per-message layout migrated to inbox logs (src/queue/inbox-migrate.ts),
 * and each inbox log's `.synced` brought up to its last whole entry (reconcileInbox).
 * `madeNow`: agents whose folders this start made (`ensureAgentsReporting`), passed by.
 */
export function sweepOrphans(root: string, madeNow: ReadonlySet<string> = new Set()): void {
  const p = hivePaths(root);
  const swept: string[] = [];
  for (const dir of [p.root, p.deadLetter, p.palace, path.join(p.palace, 'wings')]) swept.push(...sweepTempFiles(dir));
  swept.push(...sweepDeadIntents(p.root)); // hive.lock
  // The palace's mine lock: a process killed between its intent marker and its lock folder
  // leaves the marker, and no lock is there for a later taker to clear it with.
  swept.push(...sweepDeadIntents(p.palace));
  // Real folders only: one that is a symlink is refused (the agent does not start) and
  // nothing is removed or written through it (src/supervisor/agent-hosts.ts, folderProblem).
  for (const id of realSubfolders(p.agents)) {
    if (madeNow.has(id)) continue; // its folder was made by this start: nothing of a crash is in it
    try {
      const a = agentPaths(root, id);
      // Each folder listed once for all that looks at its names (at 10,000 agents this phase
      // is seconds of the start).
      const names = listDir(a.dir);
      swept.push(...sweepTempFiles(a.dir, names), ...sweepTempFiles(a.outbox), ...sweepTempFiles(a.sent));
      const inbox = listDir(a.inbox);
      swept.push(...sweepTempFiles(a.inbox, inbox));
      swept.push(...sweepDeadIntents(a.dir, names)); // memory.md's lock
      if (holdsLegacyNames(inbox)) migrateInbox(root, id);
      reconcileInbox(root, id);
    } catch {
      // not an agent folder (bad name): leave it alone
    }
  }
  if (swept.length > 0) appendEvent(root, { type: 'hive.swept', files: swept.length });
}

/**
 * The config's kickoff messages, each sent once in the hive's life: its id is derived from
 * its content and position, and `kickoff.json` lists the ids already written (written
 * after the outbox, so a crash in between sends it again under the same id, which delivery
 * drops as a duplicate). Returns the senders whose outboxes got a message.
 */
export function sendKickoff(root: string, kickoff: HiveConfig['kickoff']): string[] {
  if (kickoff.length === 0) return [];
  const file = path.join(hivePaths(root).root, 'kickoff.json');
  const done = new Set(readJsonFile<string[]>(file) ?? []);
  const fresh: HiveMessage[] = [];
  kickoff.forEach((k, i) => {
    const id = stableId('kickoff', JSON.stringify(k), String(i));
    if (done.has(id)) return;
    fresh.push(createMessage({ ...k, id }));
    done.add(id);
  });
  if (fresh.length === 0) return [];
  writeOutbox(root, fresh);
  writeJsonAtomic(file, [...done]);
  return [...new Set(fresh.map((m) => m.from))];
}
