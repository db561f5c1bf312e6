import fs from 'node:fs';
import path from 'node:path';
import { watch as chokidarWatch } from 'chokidar';
import { isAgentId } from '../protocol/agent-id.ts';

/**
 * Tells the router which outboxes changed (for files written by hand or by other
 * processes; Hive's own senders kick the router directly).
 *
 * On Linux it uses one `fs.watch` (inotify) per outbox: the event carries the file
 * name and costs no system call. chokidar does an lstat/stat per event and calls the
 * ignore filter for every path; under load that was the router thread's largest cost
 * (a --cpu-prof profile at saturation). Elsewhere chokidar, which papers over
 * platform quirks, is used as intended.
 */
export interface OutboxWatcher {
  /** True while a watch of this agent's outbox is known to work (its file events come): a look that skips the folder may rely on it. */
  watching(agent: string): boolean;
  close(): Promise<void>;
}

/**
 * `alreadyDue(agent)`: true when the router's next pass reads that outbox anyway; its
 * events are then dropped before any system call. The outboxes there when the watch starts
 * are not reported (the caller reads them all: the router's first pass is a sweep of every
 * outbox); an agent folder that appears later is, once watched (files may have landed in
 * it first). On Linux every watch is in place when this returns; chokidar (elsewhere)
 * scans asynchronously, and a file that lands in an outbox the sweep already read, before
 * chokidar's scan reaches it, waits for the router's safety poll.
 */
export function watchOutboxes(agentsDir: string, onChange: (agent: string) => void, onError: (err: unknown) => void, alreadyDue: (agent: string) => boolean = () => false): OutboxWatcher {
  return process.platform === 'linux' ? watchWithInotify(agentsDir, onChange, onError, alreadyDue) : watchWithChokidar(agentsDir, onChange, onError);
}

function watchWithInotify(agentsDir: string, onChange: (agent: string) => void, onError: (err: unknown) => void, alreadyDue: (agent: string) => boolean): OutboxWatcher {
  const watchers = new Map<string, fs.FSWatcher>();
  const add = (id: string, retries = 5, existing = false) => {
    if (!isAgentId(id) || watchers.has(id)) return;
    try {
      const outbox = path.join(agentsDir, id, 'outbox');
      // A rename reports both ends: a file arriving and a file the router itself just
      // moved to .sent/. Only an arrival (the name still exists) is worth a pass.
      const w = fs.watch(outbox, (_event, name) => {
        if (name === 'outbox' && !fs.existsSync(path.join(outbox, name))) {
          // The outbox itself went (removed or renamed; a new one would never be reported
          // by this watch): it is read now and watched again, and is not `watching` until then.
          w.close();
          watchers.delete(id);
          onChange(id);
          add(id);
        } else if (typeof name === 'string' && !name.startsWith('.') && !alreadyDue(id) && fs.existsSync(path.join(outbox, name))) onChange(id);
      });
      w.on('error', (err) => {
        watchers.delete(id);
        onError(err);
      });
      watchers.set(id, w);
      // Files may have landed before the watch: a new agent's are read now; the sweep the
      // caller starts with reads those of the agents already there (reporting each of them
      // here would put all 10,000 of a big hive's outboxes in one pass instead of slices).
      if (!existing) onChange(id);
    } catch (err) {
      // The folder of a brand-new agent may not have its outbox yet.
      if (retries > 0) setTimeout(() => add(id, retries - 1), 50).unref();
      else onError(err);
    }
  };
  // The folder's watch before its listing: an agent folder made between the two is then
  // seen by the watch (`add` passes by an id it has).
  const top = fs.watch(agentsDir, (_event, name) => {
    if (typeof name === 'string') add(name);
  });
  top.on('error', onError);
  for (const id of fs.readdirSync(agentsDir)) add(id, 5, true);
  return {
    watching: (agent) => watchers.has(agent),
    async close() {
      top.close();
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

function watchWithChokidar(agentsDir: string, onChange: (agent: string) => void, onError: (err: unknown) => void): OutboxWatcher {
  // Only agents/<id>/outbox/<file> matters; inboxes change constantly.
  const ignored = (p: string) => {
    const rel = path.relative(agentsDir, p);
    if (rel === '') return false;
    const parts = rel.split(path.sep);
    if (parts.length === 1) return false;
    if (parts.length === 2) return parts[1] !== 'outbox';
    if (parts.length === 3) return parts[2]!.startsWith('.');
    return true;
  };
  const w = chokidarWatch(agentsDir, { ignored, ignoreInitial: true, atomic: false, depth: 2 });
  w.on('add', (file) => onChange(path.basename(path.dirname(path.dirname(file)))));
  w.on('error', onError);
  return { watching: () => false, close: () => w.close() }; // its first scan may still be under way
}
