import { hash, randomBytes } from 'node:crypto';

/**
 * Message ids: 26 characters of lower-case Crockford base32 that sort by time.
 *
 *   tttttttttt ccc rrrrrrrrrrrrr
 *   time (ms)  seq  random / digest
 *
 * `seq` increases for ids made in the same millisecond by one process, so the
 * ids one sender writes sort in the order it wrote them (per-pair FIFO relies
 * on that: the router reads an outbox in name order).
 */

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_LEN = 10;
const SEQ_LEN = 3;
const TAIL_LEN = 13;
const SEQ_MAX = 32 ** SEQ_LEN - 1;

/** Pattern every message id must match; also safe as a file name. */
export const MESSAGE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** SHA-256 of `text`, one call (`crypto.hash`: no Hash object per id; half the cost of `createHash` per message an agent emits). */
function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer') as unknown as Buffer;
}

function encode(value: number, length: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[v % 32] + out;
    v = Math.floor(v / 32);
  }
  return out;
}

function encodeBytes(bytes: Uint8Array, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i % bytes.length]! % 32];
  return out;
}

/** A per-process source of strictly increasing (ms, seq) pairs. */
class IdClock {
  private lastMs = 0;
  private seq = 0;

  next(nowMs: number): { ms: number; seq: number } {
    if (nowMs > this.lastMs) {
      this.lastMs = nowMs;
      this.seq = 0;
    } else if (this.seq < SEQ_MAX) {
      this.seq += 1;
    } else {
      this.lastMs += 1;
      this.seq = 0;
    }
    return { ms: this.lastMs, seq: this.seq };
  }
}

const clock = new IdClock();

/**
 * A new time-sortable random id.
 * @example newId() // '01jd8x4k7m000q3v9c2h5n8rtw'
 */
export function newId(nowMs: number = Date.now()): string {
  const { ms, seq } = clock.next(nowMs);
  return encode(ms, TIME_LEN) + encode(seq, SEQ_LEN) + encodeBytes(randomBytes(TAIL_LEN), TAIL_LEN);
}

/**
 * The id of the `index`-th message an agent emits while handling an input: the same on
 * every run of that turn, so a turn run twice emits the same ids and every receiver's
 * duplicate check keeps one. A turn runs twice when two owners of one agent both commit it:
 * a cluster's commit fence is a check the NATS leader makes before replication, and two
 * publishes in flight together can both pass it (nats-server issue 4320). The tail is a
 * digest of (agent, input, index), the time part the input's own time (`inputMs`: its id's
 * time, or a timer's due time), the index in the sequence part: nothing from the clock.
 * @example deriveId('alice', '01jd8x...', 0, idTime('01jd8x...') ?? 0)
 */
export function deriveId(agentId: string, inputId: string, index: number, inputMs: number): string {
  const ms = Math.max(0, Math.floor(inputMs)) + Math.floor(index / (SEQ_MAX + 1));
  const digest = sha256(`${agentId}\0${inputId}\0${index}`);
  return encode(ms, TIME_LEN) + encode(index % (SEQ_MAX + 1), SEQ_LEN) + encodeBytes(digest, TAIL_LEN);
}

/** The creation time encoded in an id made by `newId`/`deriveId`, or null for foreign ids. */
export function idTime(id: string): number | null {
  if (id.length !== TIME_LEN + SEQ_LEN + TAIL_LEN) return null;
  let ms = 0;
  for (const ch of id.slice(0, TIME_LEN)) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return null;
    ms = ms * 32 + v;
  }
  return ms;
}

/**
 * A deterministic id for a runtime notice about `subject` (a bounce for a rejected
 * file, a failure report): the same inputs always give the same id, so a notice
 * re-sent after a crash is dropped by the inbox's idempotency check.
 */
export function stableId(kind: string, ...parts: string[]): string {
  const digest = sha256(parts.join('\0'));
  return `${kind}-${encodeBytes(digest, 20)}`;
}
