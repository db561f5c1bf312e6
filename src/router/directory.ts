import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { GOD_ID, SYSTEM_SENDER, isAgentId } from '../protocol/agent-id.ts';
import { agentPaths, hivePaths } from '../layout/paths.ts';
import { readRegistry } from '../registry/registry.ts';
import { entryKind, readRegularFile, type EntryKind } from '../fs/regular-file.ts';

/**
 * Who the router delivers to and reads from. Agent folders are untrusted (people and
 * programs write into the hive): only agents recorded in registry.json count, and only
 * when their folders are real folders, never symlinks (lstat, never followed).
 */

export interface AgentDirectory {
  /** Every agent with an inbox. */
  all: Set<string>;
  /** Agents whose outbox the router reads: a real folder (or none yet), with a real `.sent/`. */
  senders: Set<string>;
  /** Agents that take part in broadcasts (not archived, not god or the `hive` system agent). */
  broadcastable: Set<string>;
  /** Folders under agents/ that are not recipients, with the reason (logged once by the cache). */
  refused: Map<string, string>;
  /** What the folder checks found per registered agent (a later read may reuse them). */
  checked?: Map<string, FolderCheck>;
}

/** Why an agent cannot receive, and why it cannot send (null: it can). */
export interface FolderCheck {
  receive: string | null;
  send: string | null;
}

/** What a path is (lstat: never followed), or null when nothing is there. */
function kindAt(p: string): EntryKind | null {
  try {
    return entryKind(fs.lstatSync(p));
  } catch {
    return null;
  }
}

/** Why an agent folder cannot receive, or null when it can: a real folder with a real inbox. */
function receiveProblem(root: string, id: string): string | null {
  const p = agentPaths(root, id);
  const dir = kindAt(p.dir);
  if (dir === null) return 'its folder is missing';
  if (dir === 'symbolic link') return 'its folder is a symbolic link (it could point outside the hive)';
  if (dir !== 'directory') return `agents/${id} is a ${dir}, not a folder`;
  const inbox = kindAt(p.inbox);
  if (inbox === null) return 'it has no inbox folder';
  if (inbox !== 'directory') return `its inbox is a ${inbox}, not a folder`;
  return null;
}

/** Why the router cannot read an agent's outbox, or null: a real folder (or none yet) with a real `.sent/`. */
function sendProblem(root: string, id: string): string | null {
  const p = agentPaths(root, id);
  for (const [where, at] of [['outbox', p.outbox], ['outbox/.sent', p.sent]] as const) {
    const kind = kindAt(at);
    if (kind !== null && kind !== 'directory') return `its ${where} is a ${kind}, not a folder`;
  }
  return null;
}

/**
 * Reads who can receive: the agents recorded in registry.json whose folder is a real
 * folder with a real inbox (lstat: a symlinked folder could point anywhere). A folder
 * under agents/ that is not a registered agent (a backup, a stray mkdir) is not a
 * recipient; a message to it is an unknown recipient, dead-lettered with a bounce.
 * An unreadable registry keeps the `previous` directory (or, with none, the folders
 * that have an inbox): it must not stop routing.
 */
export function readDirectory(root: string, previous: AgentDirectory | null = null, recheck: (id: string) => boolean = () => true): AgentDirectory {
  const refused = new Map<string, string>();
  let folders: string[] = [];
  // Entries of agents/ that are not plain folders (a folder swapped for a symlink): looked
  // at again whatever `recheck` says; the listing's types cost no extra system call.
  const notFolders = new Set<string>();
  try {
    for (const e of fs.readdirSync(hivePaths(root).agents, { withFileTypes: true })) {
      if (!isAgentId(e.name)) continue;
      folders.push(e.name);
      if (!e.isDirectory()) notFolders.add(e.name);
    }
  } catch {
    folders = [];
  }
  let registered: Map<string, { archived: boolean; system: boolean }>;
  try {
    const reg = readRegistry(root);
    registered = new Map(Object.values(reg.agents).map((a) => [a.id, { archived: a.status === 'archived', system: a.origin === 'system' }]));
  } catch {
    if (previous) return previous;
    registered = new Map(folders.map((id) => [id, { archived: false, system: false }]));
  }
  const all = new Set<string>();
  const senders = new Set<string>();
  const checked = new Map<string, FolderCheck>();
  for (const id of new Set([...folders, ...registered.keys()])) {
    if (!isAgentId(id)) continue;
    if (!registered.has(id)) {
      refused.set(id, `agents/${id} is not an agent of this hive (not in registry.json)`);
      continue;
    }
    const known = previous?.checked?.get(id);
    // A folder with a problem is looked at every time (it may have been fixed); a sound one
    // when the caller says so.
    const check = known && !known.receive && !known.send && !notFolders.has(id) && !recheck(id) ? known : checkFolders(root, id);
    checked.set(id, check);
    if (check.receive) {
      refused.set(id, `agent "${id}" cannot receive: ${check.receive}`);
      continue;
    }
    all.add(id);
    if (check.send) refused.set(id, `agent "${id}" cannot send: ${check.send} (its messages wait until it is fixed)`);
    else senders.add(id);
  }
  const excluded = new Set<string>([GOD_ID, SYSTEM_SENDER]);
  for (const [id, r] of registered) if (r.archived || r.system) excluded.add(id);
  const broadcastable = new Set([...all].filter((id) => !excluded.has(id)));
  return { all, senders, broadcastable, refused, checked };
}

function checkFolders(root: string, id: string): FolderCheck {
  const receive = receiveProblem(root, id);
  return { receive, send: receive ? null : sendProblem(root, id) };
}

/** How often the cache looks at a share of the folders again. */
const RECHECK_EVERY_MS = 1_000;

/** Sound folders looked at again per recheck, in rotation (refused ones: all of them, each time). */
const RECHECK_PER_LOOK = 50;

/**
 * The registry and the agents folder are looked at again at least this often, whatever
 * their stats say (a change within one tick of the file system's clock keeps them); read
 * again only when their content differs from the last read's.
 */
const DIRECTORY_MAX_AGE_MS = 60_000;

/**
 * What the directory is read from, as content: registry.json's hash and the agents folder's
 * listing. ~10 ms at 10,000 agents (a 3 MB registry), against 70–100 ms for a read (its
 * parse, 10,000 folders' sets): a read every 60 s held the router that long, and a request
 * routed then took 90–120 ms (bench:scale, 58 s after ready).
 */
function contentOf(root: string): string {
  const p = hivePaths(root);
  let registry = '-';
  let names = '-';
  try {
    registry = createHash('sha1').update(readRegularFile(p.registry)).digest('hex');
  } catch {
    // unreadable: the read keeps what it had; so does this
  }
  try {
    // With each entry's type (no extra system call): a folder swapped for a symlink of the same name differs.
    names = fs
      .readdirSync(p.agents, { withFileTypes: true })
      .map((e) => `${e.name}:${e.isDirectory() ? 'd' : e.isSymbolicLink() ? 'l' : 'o'}`)
      .join('/');
  } catch {
    // likewise
  }
  return `${registry}|${names}`;
}

/**
 * Caches the directory between passes (docs/architecture.md, "Idle agents cost nothing").
 * It is read again when the agents folder or registry.json changed (two stats per pass:
 * inode, times, size and link count, so an atomic replace or a new folder is seen
 * whatever the clock's granularity), and when their content (`contentOf`) differs at the
 * DIRECTORY_MAX_AGE_MS look. A read checks the
 * folders of new and refused agents, entries of agents/ that are not plain folders (a
 * folder swapped for a symlink) and the rotation's next share. Every RECHECK_EVERY_MS,
 * RECHECK_PER_LOOK sound folders in rotation and every refused one are looked at again (an
 * inbox replaced inside an agent's folder changes neither stat); the directory is read
 * again only when one of them changed. So a hive of 10,000 agents pays ~200 lstats a
 * second instead of a 50 ms stall of every message each 10 s (a registry parse, a listing
 * and 2,000 lstats at once). `onRefused` hears each refused folder once, when first seen.
 */
export function createDirectoryCache(root: string, onRefused: (id: string, reason: string) => void = () => undefined): () => AgentDirectory {
  let key = '';
  let readAt = 0;
  let lookedAt = 0;
  let cached: AgentDirectory | null = null;
  let rotation = 0;
  const told = new Map<string, string>();
  const stamp = (f: string) => {
    try {
      const st = fs.statSync(f, { bigint: true });
      return `${st.ino}:${st.mtimeNs}:${st.ctimeNs}:${st.size}:${st.nlink}`;
    } catch {
      return '-';
    }
  };
  /** The content the cached directory was read from (taken before the read: a change meanwhile reads again). */
  let content = '';
  const read = (recheck: (id: string) => boolean) => {
    content = contentOf(root);
    cached = readDirectory(root, cached, recheck);
    for (const [id, reason] of cached.refused) {
      if (told.get(id) !== reason) onRefused(id, reason);
      told.set(id, reason);
    }
    return cached;
  };
  /** The next RECHECK_PER_LOOK folders of the rotation (all of a hive of up to 50 agents). */
  const nextShare = (checked: Map<string, FolderCheck>): Set<string> => {
    const ids = [...checked.keys()];
    const share = new Set<string>();
    for (let i = 0; i < Math.min(RECHECK_PER_LOOK, ids.length); i++) share.add(ids[(rotation + i) % ids.length]!);
    rotation = ids.length > 0 ? (rotation + RECHECK_PER_LOOK) % ids.length : 0;
    return share;
  };
  return () => {
    const p = hivePaths(root);
    const now = `${stamp(p.agents)}|${stamp(p.registry)}`;
    const at = Date.now();
    const stale = at - readAt > DIRECTORY_MAX_AGE_MS;
    if (stale && cached && now === key && contentOf(root) === content) readAt = at;
    else if (!cached || now !== key || stale) {
      key = now;
      readAt = lookedAt = at;
      const share = cached?.checked ? nextShare(cached.checked) : new Set<string>();
      return read((id) => share.has(id));
    }
    if (at - lookedAt < RECHECK_EVERY_MS) return cached;
    lookedAt = at;
    const checked = cached.checked ?? new Map<string, FolderCheck>();
    const again = nextShare(checked);
    for (const [id, c] of checked) if (c.receive || c.send) again.add(id);
    for (const id of again) {
      const was = checked.get(id);
      const is = checkFolders(root, id);
      if (was?.receive !== is.receive || was?.send !== is.send) return read((x) => again.has(x));
    }
    return cached;
  };
}
