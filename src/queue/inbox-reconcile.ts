import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { isRealDirectory } from '../fs/regular-file.ts';
import { MarkerFile } from '../fs/marker.ts';
import { appendEvent } from '../log/event-log.ts';
import { decodeEntryLine, isRealSegment, listSegments, readSegmentFrom, readSynced, splitLines, SYNCED_NAME, type ScannedLine, type Segment } from './inbox-log.ts';
import { deadLetterData } from './dead-letter.ts';
import { syncFdAsync } from '../fs/atomic.ts';

/**
 * Start-up recovery of one inbox log, before any router runs (supervisor start): when the
 * log holds whole valid entries past `.synced` (a router killed between its flush and the
 * marker, or a power cut that kept the log but not the marker, which is never flushed), the
 * last segment is flushed and `.synced` moved up to them. Without this, entries whose
 * senders were settled already would stay unread until the next delivery to that inbox.
 * Returns the seq `.synced` names afterwards.
 */
export function reconcileInbox(root: string, agentId: string): number {
  const dir = agentPaths(root, agentId).inbox;
  if (!isRealDirectory(dir)) return 0;
  const synced = readSynced(dir);
  const last = listSegments(dir).segments.filter(isRealSegment).at(-1);
  if (!last) return synced;
  const where = `agents/${agentId}/inbox/${last.name}`;
  if (endsWithSeq(last.file, synced, where)) return synced;
  const lines = splitLines(readSegmentFrom(last.file, 0, where), 0, last.first);
  let end = synced;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i]!.seq <= synced) break;
    if (decodeEntryLine(lines[i]!.text, lines[i]!.seq, last.name).ok) {
      end = lines[i]!.seq;
      break;
    }
  }
  if (end <= synced) return synced;
  const fd = fs.openSync(last.file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    if (fs.fstatSync(fd).isFile()) fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  const marker = new MarkerFile(path.join(dir, SYNCED_NAME), 64);
  marker.write({ seq: end });
  marker.close();
  appendEvent(root, { type: 'inbox.synced-recovered', agent: agentId, from: synced, to: end });
  return end;
}

/** How much of a segment's end `endsWithSeq` reads. */
const TAIL_BYTES = 64 * 1024;

/**
 * True when a segment's last line is whole and the valid entry of `seq`: the common case
 * at a start (the router flushed and marked its last batch), told from the segment's last
 * 64 KiB instead of a read of all of it (up to `segmentBytes` per inbox, at every start).
 * False for anything else, which the full read then decides.
 */
function endsWithSeq(file: string, seq: number, where: string): boolean {
  if (seq <= 0) return false;
  const tail = readSegmentFrom(file, -TAIL_BYTES, where);
  if (tail.length === 0 || tail[tail.length - 1] !== 10) return false;
  const start = tail.lastIndexOf(10, tail.length - 2) + 1;
  if (start === 0 && tail.length === TAIL_BYTES) return false; // a line longer than the tail read
  return decodeEntryLine(tail.toString('utf8', start, tail.length - 1), seq, where).ok;
}

/**
 * Opening an inbox's last segment for the writer (InboxWriter's recovery): cuts what follows
 * its last valid line (whole lines of junk kept in dead-letter/ first, a half line is a
 * write cut short; both logged) and flushes it. Returns its descriptor, where the valid
 * lines end and the last one's seq.
 */
export async function recoverTail(root: string, agentId: string, label: string, seg: Segment, lines: ScannedLine[]): Promise<{ fd: number; end: number; seq: number }> {
  let end = 0;
  let seq = seg.first - 1;
  // The valid prefix ends at the last line that checks; anything after it is a torn write.
  for (let i = lines.length - 1; i >= 0; i--) {
    if (decodeEntryLine(lines[i]!.text, lines[i]!.seq, seg.name).ok) {
      end = lines[i]!.end;
      seq = lines[i]!.seq;
      break;
    }
  }
  const fd = fs.openSync(seg.file, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW);
  const size = fs.fstatSync(fd).size;
  if (size > end) {
    const tail = readSegmentFrom(seg.file, end, seg.name);
    const whole = tail.lastIndexOf(10) + 1; // bytes of complete lines in the tail
    if (whole > 0) {
      // Whole lines that are not entries: written by hand, or garbled by the disk. Kept.
      deadLetterData(root, `at-${end}-of-${agentId}-${seg.name}`, tail.toString('utf8', 0, whole), {
        error: `${whole} bytes at the end of agents/${agentId}/inbox/${seg.name} are lines that are not valid entries: moved here and cut off the log`,
        code: 'E_BAD_MESSAGE',
        source: `${label}/${seg.name}`,
      }, { exactName: true });
    }
    // Bytes after the last newline are a write cut short (the router's retry writes it again).
    fs.ftruncateSync(fd, end);
    appendEvent(root, { type: 'inbox.tail-cut', agent: agentId, segment: seg.name, bytes: size - end, junk: whole });
  }
  await syncFdAsync(fd, true); // a killed router's last batch may still be only in the page cache
  return { fd, end, seq };
}
