// One echo agent of the Redis Streams peer, in a worker thread with its own connection. Its
// inbox is the stream in:<agent> read through a consumer group; a turn is one Lua script over
// the batch, run atomically and written to the AOF (appendfsync always) before Redis answers:
// for each request not yet in the agent's seen-set, a reply is appended to in:client and the
// agent's counter moved; every entry is acknowledged. A replayed turn finds its ids seen.
import { workerData, parentPort } from 'node:worker_threads';
import { Redis } from 'ioredis';

const { port, agent, batch } = workerData;
const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: null });
await redis.connect();
redis.defineCommand('turn', {
  numberOfKeys: 4,
  // KEYS: inbox stream, seen set, client stream, counters hash. ARGV: agent, then entry id, request id, body triples.
  lua: `
    local n = 0
    for i = 2, #ARGV, 3 do
      if redis.call('SADD', KEYS[2], ARGV[i + 1]) == 1 then
        redis.call('XADD', KEYS[3], '*', 'id', 'reply:' .. ARGV[1] .. ':' .. ARGV[i + 1], 'in_reply_to', ARGV[i + 1], 'body', ARGV[i + 2])
        n = n + 1
      end
      redis.call('XACK', KEYS[1], 'g', ARGV[i])
    end
    redis.call('HINCRBY', KEYS[4], ARGV[1], n)
    return n
  `,
});
const inbox = `in:${agent}`;
let stopping = false;
parentPort.on('message', (m) => {
  if (m === 'stop') stopping = true;
});
parentPort.postMessage('ready');
// '0' first: entries delivered to this consumer before a crash and never acknowledged.
let from = '0';
while (!stopping) {
  const res = await redis.xreadgroup('GROUP', 'g', agent, 'COUNT', batch, 'BLOCK', 200, 'STREAMS', inbox, from);
  const entries = res?.[0]?.[1] ?? [];
  if (entries.length === 0) {
    from = '>';
    continue;
  }
  const args = [];
  for (const [entryId, fields] of entries) {
    const f = {};
    for (let i = 0; i < fields.length; i += 2) f[fields[i]] = fields[i + 1];
    args.push(entryId, f.id, f.body);
  }
  await redis.turn(inbox, `seen:${agent}`, 'in:client', 'handled', agent, ...args);
}
await redis.quit();
process.exit(0);
