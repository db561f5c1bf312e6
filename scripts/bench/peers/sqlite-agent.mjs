// One echo agent of the SQLite peer, in a worker thread with its own connection. Its inbox
// is the rows addressed to it after its cursor; a turn is one IMMEDIATE transaction that
// reads a batch, inserts one reply per request (id derived from the request: UNIQUE, so a
// replayed turn cannot reply twice) and moves its cursor. Woken by a BroadcastChannel
// message after a commit addressed to it; it tells the client channel after its own.
import { workerData, parentPort } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, agent, batch } = workerData;
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 10000');
const cursorOf = db.prepare('SELECT seq FROM cursors WHERE agent = ?').pluck();
const inbox = db.prepare('SELECT seq, id, sender, body FROM messages WHERE recipient = ? AND seq > ? ORDER BY seq LIMIT ?');
const reply = db.prepare('INSERT OR IGNORE INTO messages (id, sender, recipient, in_reply_to, body) VALUES (?, ?, ?, ?, ?)');
const advance = db.prepare('UPDATE cursors SET seq = ?, handled = handled + ? WHERE agent = ?');
const turn = db.transaction(() => {
  const rows = inbox.all(agent, cursorOf.get(agent), batch);
  for (const r of rows) reply.run(`reply:${agent}:${r.id}`, agent, r.sender, r.id, r.body);
  if (rows.length > 0) advance.run(rows[rows.length - 1].seq, rows.length, agent);
  return rows.map((r) => r.id);
});

const wake = new BroadcastChannel(`wake:${agent}`);
const client = new BroadcastChannel('client');
/** Turns until the inbox is empty. Synchronous: no wake-up can arrive in between. */
function work() {
  for (;;) {
    const handled = turn.immediate();
    if (handled.length === 0) return;
    client.postMessage({ agent, handled });
  }
}
wake.onmessage = () => work();
parentPort.on('message', (m) => {
  if (m === 'stop') {
    wake.close();
    client.close();
    db.close();
    process.exit(0);
  }
});
parentPort.postMessage('ready');
work();
