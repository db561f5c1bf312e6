import { writeOutbox } from '../queue/outbox.ts';
import { createMessage, type HiveMessage } from '../protocol/message.ts';
import { answerQuestion, listQuestions } from '../human/questions.ts';
import { createFsTransport } from '../queue/fs-transport.ts';
import { inboxRows } from '../queue/tool-transport.ts';
import { GOD_ID } from '../protocol/agent-id.ts';
import { isTransientResourceError } from '../fs/shortage.ts';
import type { Rng } from './rng.ts';

export const CLIENT = 'chaos-client';

export type RequestKind = 'plain' | 'throw' | 'ask';

/**
 * The chaos workload and its ledger: every message it got acknowledged (the durable write
 * returned), every memory entry, every answer. The invariants are checked against it.
 */
export class Workload {
  readonly requests = new Map<string, { to: string; kind: RequestKind }>();
  readonly broadcasts: string[] = [];
  readonly memory: { agent: string; marker: string }[] = [];
  readonly answers = new Map<string, { question: string; to: string }>();
  private readonly recent: HiveMessage[] = [];
  private n = 0;
  /** Inboxes are read through the hive's transport, as its tools read them. Closed by `close`. */
  private readonly transport;

  constructor(
    private readonly root: string,
    private readonly agents: string[],
    private readonly rng: Rng,
    private readonly remember: (root: string, agent: string, text: string) => Promise<unknown>,
  ) {
    this.transport = createFsTransport(root);
  }

  close(): void {
    this.transport.close();
  }

  /** What the client's inbox held as last read: the requests replied to, and how far it was read. */
  private readonly replied = new Set<string>();
  private clientSeq = 0;
  private clientEntries = 0;

  private reading: Promise<void> = Promise.resolve();

  /** Reads the client's inbox on from where the last look ended (one look at a time: two would count its entries twice). */
  private readReplies(): Promise<void> {
    const next = this.reading.then(() => this.readRepliesOnce());
    this.reading = next.catch(() => undefined);
    return next;
  }

  private async readRepliesOnce(): Promise<void> {
    for (const e of await this.transport.read(CLIENT, this.clientSeq)) {
      this.clientSeq = e.seq;
      this.clientEntries += 1;
      if (e.message.in_reply_to) this.replied.add(e.message.in_reply_to);
    }
  }

  /** How many entries the client's inbox holds. */
  async repliesHeld(): Promise<number> {
    await this.readReplies();
    return this.clientEntries;
  }

  /** Sends one request (acknowledged once durable); `kind` throw/ask exercise faults and people. */
  request(kind: RequestKind = 'plain', to = this.rng.pick(this.agents)): HiveMessage {
    const n = this.n++;
    const body = kind === 'throw' ? `chaos:throw-once ${n}` : kind === 'ask' ? `chaos:ask ${n}` : `req ${n}`;
    const m = createMessage({ from: CLIENT, to, act: 'request', body });
    writeOutbox(this.root, [m]);
    this.requests.set(m.id, { to, kind });
    this.recent.push(m);
    if (this.recent.length > 40) this.recent.shift();
    return m;
  }

  /**
   * A retrying client: after an outage it sends its last requests again, with the same
   * ids, because it cannot know which were routed. Delivery must drop the copies.
   */
  resendRecent(count = 10): number {
    // Not the newest: those may still wait in the outbox. Older ones were surely routed.
    const again = this.recent.slice(0, count);
    writeOutbox(this.root, again);
    return again.length;
  }

  /** A message to someone who is not an agent (a stray folder): it must end in dead-letter, not in the ledger. */
  sendTo(to: string): HiveMessage {
    const m = createMessage({ from: CLIENT, to, act: 'inform', body: `to ${to}`, requires_reply: false });
    writeOutbox(this.root, [m]);
    return m;
  }

  /** One request if the disk takes it now; false while it is full (not acknowledged: not in the ledger). */
  trySend(): boolean {
    try {
      this.request('plain');
      return true;
    } catch (err) {
      if (isTransientResourceError(err)) return false;
      throw err;
    }
  }

  /** The id of the newest request. */
  lastId(): string {
    return this.recent.at(-1)?.id ?? '';
  }

  /** True when the client has the reply to request `id`. */
  async answered(id: string): Promise<boolean> {
    await this.readReplies();
    return this.replied.has(id);
  }

  broadcast(): HiveMessage {
    const m = createMessage({ from: CLIENT, to: 'broadcast', act: 'inform', body: `all hands ${this.n++}`, requires_reply: false });
    writeOutbox(this.root, [m]);
    this.broadcasts.push(m.id);
    return m;
  }

  async rememberOne(): Promise<void> {
    const agent = this.rng.pick(this.agents);
    const marker = `chaos-memory-${this.n++}-${Math.floor(this.rng.next() * 1e9)}`;
    await this.remember(this.root, agent, `Chaos note\n${marker}`);
    this.memory.push({ agent, marker });
  }

  /** The people in the loop, automated: answers every open question. */
  async answerQuestions(): Promise<number> {
    let answered = 0;
    const inbox = await inboxRows(this.transport, GOD_ID);
    for (const q of listQuestions(this.root, { open: true, inbox })) {
      if (q.from === 'hive') continue;
      const reply = answerQuestion(this.root, q.id, 'yes, go ahead', { inbox });
      this.answers.set(reply.id, { question: q.id, to: q.from });
      answered += 1;
    }
    return answered;
  }

  /** One tick of background traffic. */
  async tick(): Promise<void> {
    const r = this.rng.next();
    try {
      this.request(r < 0.04 ? 'ask' : 'plain');
      if (r > 0.93) this.broadcast();
      if (r > 0.85 && r <= 0.93) await this.rememberOne();
      if (this.n % 10 === 0) await this.answerQuestions();
    } catch (err) {
      // A full disk: what was not written was not acknowledged, and is not in the ledger.
      if (!isTransientResourceError(err)) throw err;
    }
  }
}
