import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { HiveError } from '../errors.ts';
import { parseMessage, type HiveMessage } from '../protocol/message.ts';
import { listEntries, openRegular, readRegularFile } from '../fs/regular-file.ts';

/**
 * The inbox log's format (docs/architecture.md, "Inbox logs"): `agents/<id>/inbox/` holds
 * segments named by the seq of their first entry (`000000000001.jsonl`), each an
 * append-only file of one JSON object per line:
 *
 *   {"seq":7,"sum":"<8 hex>","message":{…the message…}}
 *
 * `seq` is the line's position (the segment's first seq plus its line index: a line
 * always takes its seq, even one that fails its check), `sum` the CRC-32 of
 * `<seq>:<message JSON>` (UTF-8) in 8 hex digits, so a torn or hand-edited line is told
 * from a good one (lines written by Hive 0.1 carry the first 16 hex digits of its SHA-256
 * instead, still read: `sumOf`);
 * `jq .message` and `grep` read it with a shell. `inbox/.synced` names the last seq known
 * to be on stable storage: readers never go past it (an entry a power cut could still take
 * away is never handled). Only the router writes either (src/queue/inbox-writer.ts).
 */

export const SEQ_WIDTH = 12;
const SEGMENT_NAME = /^(\d{12})\.jsonl$/;

export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(SEQ_WIDTH, '0')}.jsonl`;
}

export function parseSegmentName(name: string): number | null {
  const m = SEGMENT_NAME.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * The line's check: CRC-32 (zlib's, native: a fifth of a SHA-256's cost per line, and the
 * router computes one per delivered message) as 8 hex digits. `width` 16 is the earlier
 * format's SHA-256 prefix, kept so a hive written by an earlier version reads on.
 */
function sumOf(seq: number, messageJson: string, width: 8 | 16 = 8): string {
  const text = `${seq}:${messageJson}`;
  if (width === 16) return createHash('sha256').update(text).digest('hex').slice(0, 16);
  return crc32(text).toString(16).padStart(8, '0');
}

/** The sum field's width in a line: 8 (CRC-32) or 16 (the earlier SHA-256 prefix); null for neither. */
function sumWidth(sum: string): 8 | 16 | null {
  return sum.length === 8 ? 8 : sum.length === 16 ? 16 : null;
}

/** One entry as its line in a segment (with its newline). */
export function encodeEntryLine(seq: number, message: HiveMessage): string {
  const json = JSON.stringify(message);
  return `{"seq":${seq},"sum":"${sumOf(seq, json)}","message":${json}}\n`;
}

export type DecodedLine = { ok: true; message: HiveMessage } | { ok: false; error: HiveError };

const MESSAGE_KEY = '","message":';

/**
 * The message of a line exactly as `encodeEntryLine` wrote it, its sum checked over the
 * JSON as it stands in the line: one parse of the message instead of a parse of the whole
 * line and a stringify of the message again. Null for anything else (the general path
 * decides, and explains).
 */
function decodeOwnLine(line: string, seq: number): unknown {
  const prefix = `{"seq":${seq},"sum":"`;
  if (!line.startsWith(prefix) || line.charCodeAt(line.length - 1) !== 0x7d) return null;
  const width = line.startsWith(MESSAGE_KEY, prefix.length + 8) ? 8 : line.startsWith(MESSAGE_KEY, prefix.length + 16) ? 16 : null;
  if (width === null) return null;
  const at = prefix.length + width;
  const json = line.slice(at + MESSAGE_KEY.length, -1);
  if (line.slice(prefix.length, at) !== sumOf(seq, json, width)) return null;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return null;
  }
}

/** Checks one line (without its newline) as the entry at `seq`. */
export function decodeEntryLine(line: string, seq: number, where: string): DecodedLine {
  const own = decodeOwnLine(line, seq);
  if (own !== null && typeof own === 'object') {
    const parsed = parseMessage(own);
    if (parsed.ok) return { ok: true, message: parsed.message };
  }
  let rec: { seq?: unknown; sum?: unknown; message?: unknown };
  try {
    rec = JSON.parse(line) as typeof rec;
  } catch {
    return { ok: false, error: new HiveError('E_BAD_MESSAGE', `${where}: line of seq ${seq} is not JSON (torn or written by hand)`) };
  }
  if (rec === null || typeof rec !== 'object' || rec.seq !== seq) {
    return { ok: false, error: new HiveError('E_BAD_MESSAGE', `${where}: line at seq ${seq} says seq ${JSON.stringify(rec?.seq)}`) };
  }
  const width = typeof rec.sum === 'string' ? sumWidth(rec.sum) : null;
  if (typeof rec.sum !== 'string' || width === null || rec.sum !== sumOf(seq, JSON.stringify(rec.message), width)) {
    return { ok: false, error: new HiveError('E_BAD_MESSAGE', `${where}: line of seq ${seq} fails its checksum (torn or edited by hand)`) };
  }
  const parsed = parseMessage(rec.message);
  return parsed.ok ? { ok: true, message: parsed.message } : { ok: false, error: parsed.error };
}

export interface Segment {
  first: number;
  name: string;
  file: string;
}

/**
 * The inbox's segments, oldest first. Anything else in the folder is ignored (people may
 * leave files there); an entry named like a segment that is not a regular file (a symlink,
 * a FIFO, a folder) is reported in `foreign` and never opened.
 */
export function listSegments(inboxDir: string): { segments: Segment[]; foreign: string[] } {
  const segments: Segment[] = [];
  const foreign: string[] = [];
  for (const d of listEntries(inboxDir)) {
    const first = parseSegmentName(d.name);
    if (first === null) continue;
    if (!d.isFile()) foreign.push(d.name);
    else segments.push({ first, name: d.name, file: path.join(inboxDir, d.name) });
  }
  return { segments: segments.sort((a, b) => a.first - b.first), foreign };
}

/**
 * True when a segment's first line is the valid entry of its first seq. A file someone put
 * in the folder under a segment's name fails this and is never read as entries (forging a
 * line's checksum on purpose is another matter: whoever can write the hive can also write
 * an outbox). An empty segment (created by a router killed before its first write) fails
 * too: it holds nothing.
 */
export function isRealSegment(seg: Segment): boolean {
  let head: Buffer;
  try {
    head = readSegmentFrom(seg.file, 0, seg.name, 64 * 1024);
  } catch {
    return false;
  }
  const [first] = splitLines(head, 0, seg.first);
  return first !== undefined && decodeEntryLine(first.text, seg.first, seg.name).ok;
}

export interface ScannedLine {
  seq: number;
  /** Byte offsets of the line in the segment (end: just after its newline). */
  start: number;
  end: number;
  text: string;
}

/**
 * Splits `buf` (read from byte `base` of a segment whose line at `base` has seq `seq`) into
 * its complete lines. A last line with no newline is not returned: it is still being
 * written, or torn.
 */
export function splitLines(buf: Buffer, base: number, seq: number): ScannedLine[] {
  const out: ScannedLine[] = [];
  let start = 0;
  for (;;) {
    const nl = buf.indexOf(10, start);
    if (nl < 0) break;
    out.push({ seq, start: base + start, end: base + nl + 1, text: buf.toString('utf8', start, nl) });
    seq += 1;
    start = nl + 1;
  }
  return out;
}

/**
 * Reads bytes [from, from + max) of a segment (up to its end), never through a symlink or
 * into a FIFO. A negative `from` counts from the end: the last `-from` bytes (all of a
 * smaller segment).
 */
export function readSegmentFrom(file: string, from: number, where: string, max = Infinity): Buffer {
  const { fd, stats } = openRegular(file, where);
  try {
    if (from < 0) from = Math.max(0, stats.size + from);
    const length = Math.max(0, Math.min(max, stats.size - from));
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = fs.readSync(fd, buf, got, length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    fs.closeSync(fd);
  }
}

export const SYNCED_NAME = '.synced';

/** The last seq the router made durable (`inbox/.synced`); 0 when there is none. */
export function readSynced(inboxDir: string): number {
  let text: string;
  try {
    text = readRegularFile(path.join(inboxDir, SYNCED_NAME), 'utf8');
  } catch {
    return 0;
  }
  try {
    const v = (JSON.parse(text) as { seq?: unknown }).seq;
    return Number.isInteger(v) && (v as number) >= 0 ? (v as number) : 0;
  } catch {
    return 0;
  }
}
