import { archiveSession, clearSession, readArchive, reopenSession } from './archive.ts';
import { acceptSwitchKeepMemory, acceptSwitchSnapshot } from './switch.ts';
import { createSnapshot } from './snapshots.ts';
import { HiveError } from '../errors.ts';
import { agentProviderSummarizer } from '../brains/summarizers.ts';
import { requireAgent, requireHive } from '../layout/ensure.ts';

export type SessionAction = 'clear' | 'archive' | 'reopen' | 'snapshot' | 'switch-keep' | 'switch-snapshot';

/** What a running supervisor lends a session action: pausing the agent, and its provider. */
export interface SessionHost {
  withAgentPaused<T>(agentId: string, fn: () => Promise<T> | T): Promise<T>;
}

/**
 * One entry point for the session commands, used by the CLI directly when no hive runs
 * and through the control socket when one does (then the agent's actor is paused).
 */
export async function runSessionAction(
  root: string,
  agentId: string,
  action: SessionAction,
  args: { key?: string | undefined; name?: string | undefined },
  host?: SessionHost,
): Promise<unknown> {
  // Offline too: a typo must not create a new agent folder or session.
  if (action === 'reopen') requireHive(root);
  else requireAgent(root, agentId);
  const paused = <T>(fn: () => Promise<T> | T) => (host ? host.withAgentPaused(agentId, fn) : Promise.resolve(fn()));
  // Snapshots are summarized by the agent's own provider (its registry brain), with or
  // without a running hive; the archive cap is the one the supervisor recorded in sessions.json.
  switch (action) {
    case 'clear':
      return { session: await paused(() => clearSession(root, agentId)) };
    case 'archive':
      return { archived: await paused(() => archiveSession(root, agentId, 'archived by hand')) };
    case 'reopen': {
      if (!args.key) throw new HiveError('E_BAD_ARGS', 'reopen needs a session key');
      const entry = readArchive(root).find((s) => s.key === args.key);
      if (!entry) throw new HiveError('E_NOT_FOUND', `No archived session ${args.key}`);
      const target = entry.agent;
      return { reopened: await (host ? host.withAgentPaused(target, () => reopenSession(root, args.key!)) : reopenSession(root, args.key)) };
    }
    case 'snapshot': {
      if (!args.name) throw new HiveError('E_BAD_ARGS', 'snapshot needs --name');
      const summarize = agentProviderSummarizer(root, agentId);
      return { snapshot: await createSnapshot(root, agentId, args.name, { ...(args.key ? { session: args.key } : {}), ...(summarize ? { summarize } : {}) }) };
    }
    case 'switch-keep':
      return { kept: await paused(() => acceptSwitchKeepMemory(root, agentId)) };
    case 'switch-snapshot':
      if (!args.name) throw new HiveError('E_BAD_ARGS', 'switch --snapshot needs a NAME');
      return { snapshot: await paused(() => acceptSwitchSnapshot(root, agentId, args.name!, agentProviderSummarizer(root, agentId))) };
    default:
      throw new HiveError('E_BAD_ARGS', `Unknown session action ${JSON.stringify(action)}`);
  }
}
