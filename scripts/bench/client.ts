// A load client in its own process: writes COUNT requests from `client` to AGENTS echo
// agents, BATCH per durable group commit (flushes issued together), as fast as the disk
// takes them. Prints `ready` once loaded (the bench's clock starts there, not at the
// process spawn) and `sent` after the last write.
import { writeOutboxAsync } from '../../src/queue/outbox.ts';
import { createMessage } from '../../src/protocol/message.ts';

const [root, count, agents, batch] = process.argv.slice(2).map((a, i) => (i === 0 ? a : Number(a))) as [string, number, number, number];
process.stdout.write('ready\n');
for (let i = 0; i < count; i += batch) {
  const msgs = Array.from({ length: Math.min(batch, count - i) }, (_, k) =>
    createMessage({ from: 'client', to: `echo-${(i + k) % agents}`, act: 'request', body: `load ${i + k}` }),
  );
  await writeOutboxAsync(root, msgs);
}
process.stdout.write('sent\n');
