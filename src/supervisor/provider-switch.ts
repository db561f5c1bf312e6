import path from 'node:path';
import { isRealDirectory } from '../fs/regular-file.ts';
import { uninstallCliConfig } from '../brains/cli-install.ts';
import type { PresetName } from '../brains/presets.ts';
import { providerBinDir } from '../package-files.ts';
import { agentPaths } from '../layout/paths.ts';
import { errorMessage } from '../errors.ts';
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
  // A symlinked agent folder is refused at start: nothing is archived or removed through it.
  if (!isRealDirectory(agentPaths(ctx.root, agentId).dir)) return;
  if (cliConfigMoved(before, after)) removeCliConfig(ctx.root, agentId, before, 'its preset or working directory changed');
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
    if (!isRealDirectory(agentPaths(ctx.root, e.id).dir)) continue; // refused folder: left as it is
    const session = await archiveSession(ctx.root, e.id, 'agent removed from the config', ctx.config.sessions.archiveEntries);
    removeCliConfig(ctx.root, e.id, e.brain, 'removed from the config');
    await updateRegistry(ctx.root, (r) => {
      if (r.agents[e.id]) r.agents[e.id]!.status = 'archived';
    });
    appendEvent(ctx.root, { type: 'agent.archived', agent: e.id, reason: 'removed from the config', session: session?.key ?? null });
  }
}

type PresetBrain = { kind?: string; preset?: PresetName; cwd?: string } | undefined;

/** The preset CLI's entries were written for another preset or another working directory than the agent has now. */
function cliConfigMoved(before: unknown, after: BrainSpec): boolean {
  const b = before as PresetBrain;
  if (b?.kind !== 'command' || !b.preset) return false;
  const a = after as PresetBrain;
  return a?.kind !== 'command' || a.preset !== b.preset || a.cwd !== b.cwd;
}

/** A preset agent's hook and MCP entries leave its CLI's working directory (the user's own stay). */
function removeCliConfig(root: string, agentId: string, brainSpec: unknown, reason: string): void {
  const brain = brainSpec as PresetBrain;
  if (brain?.kind !== 'command' || !brain.preset) return;
  try {
    const changed = uninstallCliConfig({ preset: brain.preset, cwd: brain.cwd ?? agentPaths(root, agentId).dir, root, agentId, hive: path.join(providerBinDir(), 'hive') });
    appendEvent(root, { type: 'agent.cli-config-removed', agent: agentId, preset: brain.preset, files: changed, reason });
  } catch (err) {
    appendEvent(root, { type: 'agent.cli-config-remove-failed', agent: agentId, error: errorMessage(err) });
  }
}
