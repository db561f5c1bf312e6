import { agentPaths } from '../layout/paths.ts';
import { readJsonFile } from '../fs/atomic.ts';
import { readCursor } from './cursor.ts';

/**
 * The cursor as the agent actor committed it. An actor commits `state.json`
 * (state + cursor in one atomic write) and mirrors the seq into `cursor.json`
 * afterwards, so `state.json` wins when both exist.
 */
export function committedCursor(root: string, agentId: string): number {
  let fromCursor = 0;
  try {
    fromCursor = readCursor(root, agentId);
  } catch {
    fromCursor = 0;
  }
  try {
    const state = readJsonFile<{ cursor?: unknown }>(agentPaths(root, agentId).state);
    if (state && Number.isInteger(state.cursor)) return Math.max(fromCursor, state.cursor as number);
  } catch {
    // a torn state.json cannot exist (atomic writes); an unreadable one falls back
  }
  return fromCursor;
}
