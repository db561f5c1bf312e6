import { createHash } from 'node:crypto';
import type { HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';

/**
 * A commit as its line in `state.wal`: `<digest> <json>\n`, the digest the first 16 hex
 * digits of the JSON's SHA-256 (a torn or edited line fails it). See state-store.ts.
 */

export interface StateFile {
  version: 1;
  agent: string;
  /** Monotonic commit number. */
  commit: number;
  cursor: number;
  snapshot: { value: string; context: PersistedAgentContext };
  lastTurn: {
    cursor: number;
    messages: HiveMessage[];
    /** What the turn adds to the conversation (conversational brains): restore adds it when history.json fell behind. */
    session?: SessionTurn[];
  };
  committed_at: string;
}

/** One exchange of a conversational brain's turn, as its session records it. */
export interface SessionTurn {
  user: string;
  assistant: string | null;
}

function digest(json: string): string {
  return createHash('sha256').update(json).digest('hex').slice(0, 16);
}

/** One commit as its line in state.wal: `<digest> <json>\n`. */
export function encodeCommitLine(record: StateFile): Buffer {
  const json = JSON.stringify(record);
  return Buffer.from(`${digest(json)} ${json}\n`);
}

/** Every valid commit line of `buf` (a state.wal), in file order. */
export function decodeCommitLines(buf: Buffer, agentId: string): StateFile[] {
  return decodeCommitLinesAt(buf, agentId).map((l) => l.record);
}

/** `decodeCommitLines` with each line's end offset in `buf`. */
export function decodeCommitLinesAt(buf: Buffer, agentId: string): { record: StateFile; end: number }[] {
  const out: { record: StateFile; end: number }[] = [];
  let start = 0;
  while (start < buf.length) {
    let nl = buf.indexOf(10, start);
    if (nl < 0) nl = buf.length;
    if (nl - start > 17 && buf[start] !== 0) {
      const line = buf.toString('utf8', start, nl);
      const json = line.slice(17);
      if (line[16] === ' ' && digest(json) === line.slice(0, 16)) {
        const record = JSON.parse(json) as StateFile;
        if (record.agent === agentId) out.push({ record, end: nl + 1 });
      }
    }
    start = nl + 1;
  }
  return out;
}

/**
 * The run of valid lines at the start of `buf` numbered `first`, `first + 1`, …: it stops
 * at the first line that is not the next commit (zeros, a torn line, a line of an older
 * pass through the log). `complete` is false when `buf` ends inside a line that might
 * continue the run: the caller reads on from the last line's end.
 */
export function decodeCommitRun(buf: Buffer, agentId: string, first: number): { lines: { record: StateFile; end: number }[]; complete: boolean } {
  const lines: { record: StateFile; end: number }[] = [];
  let start = 0;
  while (start < buf.length) {
    if (buf[start] === 0) return { lines, complete: true };
    const nl = buf.indexOf(10, start);
    if (nl < 0) return { lines, complete: false };
    if (nl - start <= 17 || buf[start + 16] !== 0x20) return { lines, complete: true };
    const line = buf.toString('utf8', start, nl);
    const json = line.slice(17);
    if (digest(json) !== line.slice(0, 16)) return { lines, complete: true };
    const record = JSON.parse(json) as StateFile;
    if (record.agent !== agentId || record.commit !== first + lines.length) return { lines, complete: true };
    lines.push({ record, end: nl + 1 });
    start = nl + 1;
  }
  return { lines, complete: false };
}
