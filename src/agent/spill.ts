import { writeOutbox } from '../queue/outbox.ts';
import { committedRecords, readRouted, unroutedMessages } from '../queue/commit-outbox.ts';
import { appendEvent } from '../log/event-log.ts';

/**
 * Before the commit log wraps (a checkpoint), the messages of commits the router has not
 * routed yet are written as outbox files, durably: the lines holding them are about to be
 * written over (docs/architecture.md, "The commit record is the outbox"). Copies the router
 * also routes from the record are dropped by the inboxes as duplicates.
 */
export function spillUnrouted(root: string, agentId: string): number {
  const routed = readRouted(root, agentId);
  const messages = unroutedMessages(committedRecords(root, agentId), routed, Infinity).map((m) => m.message);
  if (messages.length === 0) return 0;
  writeOutbox(root, messages);
  appendEvent(root, { type: 'outbox.spilled', agent: agentId, count: messages.length, routed_through: routed.commit });
  return messages.length;
}
