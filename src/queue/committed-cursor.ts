import { readCursor } from './cursor.ts';
import { readStateFile } from '../agent/state-store.ts';

/**
 * The cursor as the agent actor committed it. An actor commits its state and cursor in
 * one record (state.json + state.wal) and mirrors the seq into `cursor.json` lazily, so
 * the committed state wins when both exist.
 */
export function committedCursor(root: string, agentId: string): number {
  let fromCursor = 0;
  try {
    fromCursor = readCursor(root, agentId);
  } catch {
    fromCursor = 0;
  }
  try {
    const state = readStateFile(root, agentId);
    if (state) return state.cursor;
  } catch {
    // an unreadable state falls back to the mirror
  }
  return fromCursor;
}
