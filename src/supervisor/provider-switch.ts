import { readRegistry, updateRegistry } from '../registry/registry.ts';
import type { BrainSpec } from '../config/schema.ts';
import { appendEvent } from '../log/event-log.ts';
import { godNotice } from '../agent/compose.ts';
import { archiveSession } from '../session/archive.ts';
import { brainIdentity, writeSwitchOffer } from '../session/switch.ts';
import type { SupervisorContext } from './context.ts';

/**
 * A provider or model switch: the old conversation is archived (a different model
 * mid-history is a different conversation) and god is offered both ways forward:
 * keep memory (`hive switch AGENT --keep`, the history re-imported verbatim) or a
 * snapshot (`hive switch AGENT --snapshot NAME`).
 */
export async function noticeProviderSwitch(ctx: SupervisorContext, agentId: string, before: unknown, after: BrainSpec): Promise<void> {
  if (before === undefined || brainIdentity(before) === brainIdentity(after)) return;
  const archived = await archiveSession(ctx.root, agentId, 'provider switch', ctx.config.sessions.archiveEntries);
  if (!archived) return;
  writeSwitchOffer(ctx.root, agentId, { from: brainIdentity(before), to: brainIdentity(after), archived: archived.key });
  ctx.notices.post(
    godNotice(
      'switch',
      `${agentId}/${archived.key}`,
      `${agentId} switched provider`,
      `Agent ${agentId} now runs ${brainIdentity(after)} (was ${brainIdentity(before)}); its conversation (${archived.turns} turns) was archived as ${archived.key}.\n` +
        `Keep memory: hive switch ${agentId} --keep   (the history is re-imported verbatim)\n` +
        `Snapshot:    hive switch ${agentId} --snapshot NAME   (a recap is armed as background)`,
    ),
  );
  appendEvent(ctx.root, { type: 'session.switch-offered', agent: agentId, from: brainIdentity(before), to: brainIdentity(after), archived: archived.key });
}

/**
 * An agent that came from the config and is no longer in it is archived: it does not run,
 * takes no part in broadcasts, and its live conversation goes to sessions.json (its
 * folder, memory and queues stay; putting it back in the config makes it active again).
 */
export async function archiveRemovedAgents(ctx: SupervisorContext): Promise<void> {
  const inConfig = new Set(ctx.config.agents.map((a) => a.id));
  const removed = Object.values(readRegistry(ctx.root).agents).filter((e) => e.origin === 'config' && e.status !== 'archived' && !inConfig.has(e.id));
  // Conversation first, then the registry: a crash in between archives again next start
  // (the new live session is empty, so nothing is archived twice).
  for (const e of removed) {
    const session = await archiveSession(ctx.root, e.id, 'agent removed from the config', ctx.config.sessions.archiveEntries);
    await updateRegistry(ctx.root, (r) => {
      if (r.agents[e.id]) r.agents[e.id]!.status = 'archived';
    });
    appendEvent(ctx.root, { type: 'agent.archived', agent: e.id, reason: 'removed from the config', session: session?.key ?? null });
  }
}
