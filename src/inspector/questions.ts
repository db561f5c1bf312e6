import fs from 'node:fs';
import path from 'node:path';
import { agentPaths } from '../layout/paths.ts';
import { GOD_ID } from '../protocol/agent-id.ts';
import { listInbox, readInboxEntry } from '../queue/inbox.ts';
import { answeredInLedger, isQuestion } from '../audit/questions.ts';
import type { HiveMessage } from '../protocol/message.ts';

/** An ASK ME card: a message in god's inbox that asks the people something. */
export interface OpenQuestion {
  id: string;
  seq: number;
  from: string;
  act: string;
  subject: string;
  body: string;
  conversation: string;
  created_at: string;
}

/**
 * Finds the open questions: messages in god's inbox that need a reply and have none yet.
 * A question counts as answered when god sent something `in_reply_to` it (its outbox,
 * `outbox/.sent/`, or the questions ledger). Parsed files are cached by name, so a
 * refresh reads only what is new.
 */
export class QuestionBoard {
  private readonly inbox = new Map<string, HiveMessage | null>();
  private readonly replies = new Map<string, string | null>();
  /** Answered from this process before the router has moved the answer. */
  private readonly local = new Set<string>();

  constructor(private readonly root: string) {}

  markAnswered(id: string): void {
    this.local.add(id);
  }

  open(): OpenQuestion[] {
    const answered = new Set<string>([...this.local, ...answeredInLedger(this.root), ...this.godReplies()]);
    const out: OpenQuestion[] = [];
    let rows: ReturnType<typeof listInbox>;
    try {
      rows = listInbox(this.root, GOD_ID);
    } catch {
      return [];
    }
    for (const r of rows) {
      if (answered.has(r.id)) continue;
      let m = this.inbox.get(r.name);
      if (m === undefined) {
        m = readInboxEntry(this.root, GOD_ID, r.name);
        this.inbox.set(r.name, m);
      }
      if (!m || !m.requires_reply || !isQuestion({ agent: GOD_ID, from: m.from, act: m.act, needs_human: m.needs_human })) continue;
      out.push({ id: m.id, seq: r.seq, from: m.from, act: m.act, subject: m.subject, body: m.body, conversation: m.conversation, created_at: m.created_at });
    }
    return out;
  }

  private godReplies(): string[] {
    const p = agentPaths(this.root, GOD_ID);
    const out: string[] = [];
    for (const dir of [p.outbox, p.sent]) {
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const key = `${dir}/${name}`;
        let to = this.replies.get(key);
        if (to === undefined) {
          try {
            const v = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as { in_reply_to?: unknown };
            to = typeof v.in_reply_to === 'string' ? v.in_reply_to : null;
          } catch {
            to = null; // being written, or moved meanwhile: looked at again next time
            continue;
          }
          this.replies.set(key, to);
        }
        if (to) out.push(to);
      }
    }
    return out;
  }
}
