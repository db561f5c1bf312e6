import { controlRequest } from '../../supervisor/control.ts';
import { runSessionAction, type SessionAction } from '../../session/actions.ts';
import { readArchive } from '../../session/archive.ts';
import { importSnapshot, listSnapshots } from '../../session/snapshots.ts';
import { isHiveError } from '../../errors.ts';
import { requireAgent, requireHive } from '../../layout/ensure.ts';
import { JSON_OPTION, ROOT_OPTION, agentArg, badArgs, rootOf, str, type Command, type ParsedArgs } from '../args.ts';
import type { CliIO } from '../io.ts';
import { terminalLine } from '../terminal.ts';

/** Runs through the running supervisor (agent paused meanwhile), or directly when none runs. */
async function viaHive(root: string, request: Parameters<typeof controlRequest>[1], local: () => Promise<unknown>): Promise<unknown> {
  try {
    return ((await controlRequest<{ result: unknown }>(root, request)) as { result: unknown }).result;
  } catch (err) {
    if (!isHiveError(err, 'E_NOT_FOUND') || !/Nothing listens/.test((err as Error).message)) throw err;
    return local();
  }
}

function sessionCommand(name: string, action: SessionAction, summary: string, usage: string, extra: Command['options'] = {}, positionals: [number, number] = [1, 1]): Command {
  return {
    name,
    summary,
    usage,
    options: { ...ROOT_OPTION, ...JSON_OPTION, ...extra },
    positionals,
    async run(args: ParsedArgs, io: CliIO) {
      const root = rootOf(args, io);
      const agent = agentArg(this, args.positionals[0]!);
      const key = str(args, 'session');
      const snapName = str(args, 'name');
      if (action === 'snapshot' && !snapName) throw badArgs(this, 'missing --name');
      const result = await viaHive(root, { op: 'session', agent, action, ...(key ? { key } : {}), ...(snapName ? { name: snapName } : {}) }, () =>
        runSessionAction(root, agent, action, { key, name: snapName }),
      );
      io.out(args.values.json ? `${JSON.stringify(result, null, 2)}\n` : `${name} ${agent}: ${JSON.stringify(result)}\n`);
      return 0;
    },
  };
}

export const clearCommand = sessionCommand('clear', 'clear', "delete an agent's live conversation (all its files) and start a new one", 'hive clear AGENT --root DIR');
export const archiveCommand = sessionCommand('archive', 'archive', "archive an agent's live conversation into sessions.json and start a new one", 'hive archive AGENT --root DIR');
export const snapshotCommand = sessionCommand(
  'snapshot',
  'snapshot',
  'distill a conversation into a named, portable recap (snapshots.json)',
  'hive snapshot AGENT --name NAME [--session KEY] --root DIR',
  { name: { type: 'string' }, session: { type: 'string' } },
);

export const reopenCommand: Command = {
  name: 'reopen',
  summary: 'bring an archived conversation back as its agent\'s live one',
  usage: 'hive reopen KEY --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const key = args.positionals[0]!;
    const agent = readArchive(root).find((s) => s.key === key)?.agent ?? 'god';
    const result = await viaHive(root, { op: 'session', agent, action: 'reopen', key }, () => runSessionAction(root, agent, 'reopen', { key }));
    io.out(args.values.json ? `${JSON.stringify(result, null, 2)}\n` : `reopened ${JSON.stringify(result)}\n`);
    return 0;
  },
};

export const sessionsCommand: Command = {
  name: 'sessions',
  summary: 'list archived conversations and snapshots',
  usage: 'hive sessions --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const archived = readArchive(root);
    const snapshots = listSnapshots(root);
    if (args.values.json) {
      io.out(`${JSON.stringify({ archived, snapshots }, null, 2)}\n`);
      return 0;
    }
    io.out(`${archived.length} archived conversation(s)\n`);
    for (const s of archived) io.out(`  ${terminalLine(s.key)}  ${s.agent}  ${terminalLine(String(s.closed_at))}  ${s.turns} turns  ${terminalLine(String(s.title))}\n`);
    io.out(`${snapshots.length} snapshot(s)\n`);
    for (const s of snapshots) io.out(`  ${terminalLine(s.name)}  from ${terminalLine(s.agent)}  ${terminalLine(String(s.created_at))}  (${terminalLine(String(s.method))})\n`);
    return 0;
  },
};

export const importCommand: Command = {
  name: 'import',
  summary: "arm a snapshot as background for an agent's next turn",
  usage: 'hive import SNAPSHOT --into AGENT --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, into: { type: 'string' } },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const intoArg = str(args, 'into');
    if (!intoArg) throw badArgs(this, 'missing --into');
    const into = agentArg(this, intoArg, '--into');
    const name = args.positionals[0]!;
    await viaHive(root, { op: 'import', name, into }, async () => {
      requireAgent(root, into);
      return importSnapshot(root, name, into);
    });
    io.out(args.values.json ? `${JSON.stringify({ snapshot: name, into })}\n` : `armed snapshot ${name} for ${into}'s next turn\n`);
    return 0;
  },
};

export const switchCommand: Command = {
  name: 'switch',
  summary: 'after a provider/model switch: keep memory (re-import the history) or take a snapshot',
  usage: 'hive switch AGENT (--keep | --snapshot NAME) --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, keep: { type: 'boolean' }, snapshot: { type: 'string' } },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const agent = args.positionals[0]!;
    const keep = args.values.keep === true;
    const name = str(args, 'snapshot');
    if (keep === (name !== undefined)) throw badArgs(this, 'give exactly one of --keep or --snapshot NAME');
    const action: SessionAction = keep ? 'switch-keep' : 'switch-snapshot';
    const result = await viaHive(root, { op: 'session', agent, action, ...(name ? { name } : {}) }, () => runSessionAction(root, agent, action, { name }));
    io.out(args.values.json ? `${JSON.stringify(result, null, 2)}\n` : `${agent}: ${JSON.stringify(result)}\n`);
    return 0;
  },
};
