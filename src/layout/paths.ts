import path from 'node:path';
import { assertAgentId } from '../protocol/agent-id.ts';

/**
 * Path objects are built once per root (and agent) and reused: the queues ask for them
 * several times per message, and building one is a dozen path.join calls (it showed in
 * profiles of a saturated hive). Frozen, so a caller cannot change a shared one.
 */
const MAX_CACHED = 16_384;
const hiveCache = new Map<string, HivePaths>();
const agentCache = new Map<string, AgentPaths>();

function remember<T>(cache: Map<string, T>, key: string, value: T): T {
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(key, value);
  return value;
}

/** Every well-known path of a hive root (docs/architecture.md, "On-disk layout"). Pure: builds strings, touches nothing. */
export function hivePaths(root: string): HivePaths {
  const key = rootKey(root);
  return hiveCache.get(key) ?? remember(hiveCache, key, buildHivePaths(root));
}

/** A relative root resolves against the current folder, so that is part of its key. */
function rootKey(root: string): string {
  return path.isAbsolute(root) ? root : `${process.cwd()}\0${root}`;
}

function buildHivePaths(root: string) {
  const r = path.resolve(root);
  return Object.freeze({
    root: r,
    lock: path.join(r, 'hive.lock'),
    lockOwner: path.join(r, 'hive.lock.json'),
    registry: path.join(r, 'registry.json'),
    log: path.join(r, 'log.jsonl'),
    deadLetter: path.join(r, 'dead-letter'),
    agents: path.join(r, 'agents'),
    palace: path.join(r, 'palace'),
    backups: path.join(r, 'backups'),
    snapshots: path.join(r, 'snapshots.json'),
    sessions: path.join(r, 'sessions.json'),
    hooksSock: path.join(r, 'hooks.sock'),
  });
}

export type HivePaths = ReturnType<typeof buildHivePaths>;

/**
 * Paths of one agent's folder. The id is validated first, so an id taken from a
 * message can never build a path outside `<root>/agents/`.
 */
export function agentPaths(root: string, id: string): AgentPaths {
  const key = `${rootKey(root)}\0${id}`;
  const cached = agentCache.get(key);
  if (cached) return cached;
  assertAgentId(id);
  return remember(agentCache, key, buildAgentPaths(root, id));
}

function buildAgentPaths(root: string, id: string) {
  const dir = path.join(hivePaths(root).agents, id);
  // `dir` is normalized and the id a plain name, so joining is concatenation: a router
  // looking at 10,000 agents built these objects at ~20 µs each with path.join.
  const at = (...names: string[]) => `${dir}${path.sep}${names.join(path.sep)}`;
  return Object.freeze({
    id,
    dir,
    identity: at('identity.md'),
    memory: at('memory.md'),
    outbox: at('outbox'),
    sent: at('outbox', '.sent'),
    inbox: at('inbox'),
    /** The supervisor's send log for this sender (src/queue/send-log.ts). */
    sendLog: at('sendlog'),
    cursor: at('cursor.json'),
    state: at('state.json'),
    stateWal: at('state.wal'),
    /** The newest commit on stable storage (src/queue/commit-outbox.ts). */
    committed: at('committed'),
    /** How far the router has routed the commit records' messages. */
    routed: at('routed'),
    inflight: at('inflight.json'),
    sessions: at('sessions'),
  });
}

export type AgentPaths = ReturnType<typeof buildAgentPaths>;
