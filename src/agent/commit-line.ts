import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';

/**
 * A commit as its line in `state.wal`: `<digest> <json>\n`, the digest the JSON's CRC-32
 * (UTF-8) in 8 hex digits: a torn or edited line fails it. Lines written by Hive 0.1 carry
 * the first 16 hex digits of the JSON's SHA-256 instead and are still read (`lineRecord`).
 * See state-store.ts.
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
  return crc32(json).toString(16).padStart(8, '0');
}

/** The earlier format's digest (a hive written by an earlier version). */
function legacyDigest(json: string): string {
  return createHash('sha256').update(json).digest('hex').slice(0, 16);
}

/** Where the JSON of a line starting at `start` of `buf` begins, by its digest's width (8 or 16 hex and a space); 0 for neither. */
function jsonStart(buf: Buffer, start: number, end: number): number {
  if (end - start > 9 && buf[start + 8] === 0x20) return 9;
  if (end - start > 17 && buf[start + 16] === 0x20) return 17;
  return 0;
}

/**
 * The record of a whole line (without its newline) when its digest holds, else null. A
 * 32-bit check lets one wrong line in 4 billion through: one that then is not JSON is
 * refused here rather than thrown.
 */
function lineRecord(line: string, at: number): StateFile | null {
  const json = line.slice(at);
  const sum = line.slice(0, at - 1);
  if ((at === 9 ? digest(json) : legacyDigest(json)) !== sum) return null;
  try {
    return JSON.parse(json) as StateFile;
  } catch {
    return null;
  }
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
    const at = buf[start] !== 0 ? jsonStart(buf, start, nl) : 0;
    if (at > 0) {
      const record = lineRecord(buf.toString('utf8', start, nl), at);
      if (record !== null && record.agent === agentId) out.push({ record, end: nl + 1 });
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
    const at = jsonStart(buf, start, nl);
    if (at === 0) return { lines, complete: true };
    const record = lineRecord(buf.toString('utf8', start, nl), at);
    if (record === null) return { lines, complete: true };
    if (record.agent !== agentId || record.commit !== first + lines.length) return { lines, complete: true };
    lines.push({ record, end: nl + 1 });
    start = nl + 1;
  }
  return { lines, complete: false };
}
