import { createFsTransport } from '../../src/queue/fs-transport.ts';
import { writeOutbox } from '../../src/queue/outbox.ts';
import { readInbox } from '../../src/queue/inbox.ts';
import type { HiveMessage } from '../../src/protocol/message.ts';
import type { DeliveryOutcome } from '../../src/queue/inbox-writer.ts';

/**
 * Delivers straight into an inbox log, as the router would, for a hive with no router
 * running (the router is the only writer of inbox logs: never use this beside one).
 */
export async function deliverDirect(root: string, agentId: string, messages: HiveMessage[]): Promise<DeliveryOutcome[]> {
  const t = createFsTransport(root);
  try {
    return await t.deliver(agentId, messages);
  } finally {
    t.close();
  }
}

/** Delivers through a running hive's router: written to the senders' outboxes, then waited for in the inbox. */
export async function deliverThroughRouter(root: string, agentId: string, messages: HiveMessage[], timeoutMs = 15_000): Promise<void> {
  writeOutbox(root, messages);
  const want = new Set(messages.map((m) => m.id));
  const end = Date.now() + timeoutMs;
  for (;;) {
    const have = new Set(readInbox(root, agentId, 0).entries.map((e) => e.id));
    if ([...want].every((id) => have.has(id))) return;
    if (Date.now() > end) throw new Error(`deliverThroughRouter: ${[...want].filter((id) => !have.has(id)).length} message(s) did not reach ${agentId}'s inbox within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
