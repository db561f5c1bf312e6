import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';

const KEY_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Session keys are GUIDs; anything else is refused before a path is built. */
export function isSessionKey(value: unknown): value is string {
  return typeof value === 'string' && KEY_PATTERN.test(value);
}

/** Files of one session of one agent: `agents/<id>/sessions/<key>/`. */
export function sessionPaths(root: string, agentId: string, key: string) {
  if (!isSessionKey(key)) throw new Error(`Not a session key: ${JSON.stringify(key)}`);
  const dir = path.join(agentPaths(root, agentId).sessions, key);
  return {
    dir,
    history: path.join(dir, 'history.json'),
    transcript: path.join(dir, 'transcript.jsonl'),
    conversation: path.join(dir, 'conversation.jsonl'),
    background: path.join(dir, 'background.json'),
  };
}

/** `agents/<id>/sessions/current.json`: the agent's live session key (survives restarts). */
export function currentSessionFile(root: string, agentId: string): string {
  return path.join(agentPaths(root, agentId).sessions, 'current.json');
}
