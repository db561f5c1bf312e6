// The SQLite peer: the same durable workload as Hive's, on one better-sqlite3 database in WAL
// mode with synchronous=FULL (a commit is on disk before it returns). Requests and replies
// are rows of one table, each agent's cursor a row of another; see sqlite-agent.mjs.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { checkCounts, startAgentWorkers, type Peer, type PeerCheck } from './peer.ts';

const AGENT = new URL('./sqlite-agent.mjs', import.meta.url);

export async function startSqlitePeer(dir: string, agents: string[], batch = 256): Promise<Peer> {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'hive.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 10000');
  db.exec(`
    CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, sender TEXT NOT NULL,
                           recipient TEXT NOT NULL, in_reply_to TEXT, body TEXT NOT NULL);
    CREATE INDEX messages_by_recipient ON messages (recipient, seq);
    CREATE TABLE cursors (agent TEXT PRIMARY KEY, seq INTEGER NOT NULL, handled INTEGER NOT NULL);
  `);
  const addAgent = db.prepare('INSERT INTO cursors (agent, seq, handled) VALUES (?, 0, 0)');
  for (const a of agents) addAgent.run(a);
  const insert = db.prepare("INSERT OR IGNORE INTO messages (id, sender, recipient, body) VALUES (?, 'client', ?, ?)");
  const enqueue = db.transaction((requests: { id: string; to: string; body: string }[]) => {
    for (const r of requests) insert.run(r.id, r.to, r.body);
  });
  const wakes = new Map(agents.map((a) => [a, new BroadcastChannel(`wake:${a}`)]));
  const replies = new BroadcastChannel('client');
  const listeners = new Set<(ids: string[]) => void>();
  replies.onmessage = (e) => {
    for (const l of listeners) l((e as unknown as { data: { handled: string[] } }).data.handled);
  };
  const workers = await startAgentWorkers(AGENT, agents, (agent) => ({ file, agent, batch }));
  const send = (requests: { id: string; to: string; body: string }[]) => {
    enqueue(requests); // one durable transaction
    for (const to of new Set(requests.map((r) => r.to))) wakes.get(to)!.postMessage(1);
  };
  return {
    name: 'sqlite',
    send,
    onReplies(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    check(requestIds): PeerCheck {
      const counts = new Map<string, number>();
      for (const r of db.prepare('SELECT in_reply_to FROM messages WHERE recipient = ? AND in_reply_to IS NOT NULL').pluck().all('client') as string[]) {
        counts.set(r, (counts.get(r) ?? 0) + 1);
      }
      const handled = (db.prepare('SELECT SUM(handled) FROM cursors').pluck().get() as number) ?? 0;
      return checkCounts(requestIds, counts, handled);
    },
    async close() {
      for (const w of workers) w.postMessage('stop');
      await Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))));
      for (const c of wakes.values()) c.close();
      replies.close();
      db.close();
    },
  };
}
