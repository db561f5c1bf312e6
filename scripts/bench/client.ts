// A load client in its own process: writes COUNT requests from `client` to AGENTS echo
// agents, BATCH per durable group commit, as fast as the disk takes them.
import { writeOutbox } from '../../src/queue/outbox.ts';
import { createMessage } from '../../src/protocol/message.ts';

const [root, count, agents, batch] = process.argv.slice(2).map((a, i) => (i === 0 ? a : Number(a))) as [string, number, number, number];
for (let i = 0; i < count; i += batch) {
  const msgs = Array.from({ length: Math.min(batch, count - i) }, (_, k) =>
    createMessage({ from: 'client', to: `echo-${(i + k) % agents}`, act: 'request', body: `load ${i + k}` }),
  );
  writeOutbox(root, msgs);
}
process.stdout.write('sent\n');
