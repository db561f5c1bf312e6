import path from 'node:path';
import { assertAgentId } from '../protocol/agent-id.ts';

/** Every well-known path of a hive root (DESIGN §2). Pure: builds strings, touches nothing. */
export function hivePaths(root: string) {
  const r = path.resolve(root);
  return {
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
  };
}

export type HivePaths = ReturnType<typeof hivePaths>;

/**
 * Paths of one agent's folder. The id is validated first, so an id taken from a
 * message can never build a path outside `<root>/agents/`.
 */
export function agentPaths(root: string, id: string) {
  assertAgentId(id);
  const dir = path.join(hivePaths(root).agents, id);
  return {
    id,
    dir,
    identity: path.join(dir, 'identity.md'),
    memory: path.join(dir, 'memory.md'),
    outbox: path.join(dir, 'outbox'),
    sent: path.join(dir, 'outbox', '.sent'),
    inbox: path.join(dir, 'inbox'),
    done: path.join(dir, 'inbox', '.done'),
    inboxLock: path.join(dir, 'inbox', '.lock'),
    inboxLockOwner: path.join(dir, 'inbox', '.lock.owner.json'),
    inboxHead: path.join(dir, 'inbox', '.head'),
    cursor: path.join(dir, 'cursor.json'),
    state: path.join(dir, 'state.json'),
    stateWal: path.join(dir, 'state.wal'),
    inflight: path.join(dir, 'inflight.json'),
    sessions: path.join(dir, 'sessions'),
  };
}

export type AgentPaths = ReturnType<typeof agentPaths>;
