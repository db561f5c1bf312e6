import { HiveError, errorMessage, isHiveError } from '../errors.ts';
import { parseCommandArgs, type Command } from './args.ts';
import { processIO, type CliIO } from './io.ts';
import { terminalText } from './terminal.ts';
/**
 * Commands load on demand: `hive hook` and `hive send` must start fast, and most
 * commands do not need the supervisor, XState or esbuild.
 */
const LOADERS: Record<string, () => Promise<Command>> = {
  init: async () => (await import('./commands/init.ts')).initCommand,
  start: async () => (await import('./commands/start.ts')).startCommand,
  status: async () => (await import('./commands/status.ts')).statusCommand,
  send: async () => (await import('./commands/send.ts')).sendCommand,
  inbox: async () => (await import('./commands/inbox.ts')).inboxCommand,
  spawn: async () => (await import('./commands/spawn.ts')).spawnCommand,
  stop: async () => (await import('./commands/stop.ts')).stopCommand,
  token: async () => (await import('./commands/token.ts')).tokenCommand,
  ask: async () => (await import('./commands/questions.ts')).askCommand,
  answer: async () => (await import('./commands/questions.ts')).answerCommand,
  hook: async () => (await import('./commands/hook.ts')).hookCommand,
  clear: async () => (await import('./commands/sessions.ts')).clearCommand,
  archive: async () => (await import('./commands/sessions.ts')).archiveCommand,
  reopen: async () => (await import('./commands/sessions.ts')).reopenCommand,
  sessions: async () => (await import('./commands/sessions.ts')).sessionsCommand,
  snapshot: async () => (await import('./commands/sessions.ts')).snapshotCommand,
  import: async () => (await import('./commands/sessions.ts')).importCommand,
  switch: async () => (await import('./commands/sessions.ts')).switchCommand,
  chaos: async () => (await import('./commands/chaos.ts')).chaosCommand,
  log: async () => (await import('./commands/log.ts')).logCommand,
  audit: async () => (await import('./commands/audit.ts')).auditCommand,
  diagram: async () => (await import('./commands/diagram.ts')).diagramCommand,
  memory: async () => (await import('./commands/memory.ts')).memoryCommand,
};

/** Two-word commands (`hive memory add ...`), loaded with their family. */
const SUBCOMMANDS: Record<string, () => Promise<Command[]>> = {
  memory: async () => (await import('./commands/memory.ts')).MEMORY_SUBCOMMANDS,
};

export const COMMAND_NAMES = Object.keys(LOADERS);

async function helpText(): Promise<string> {
  const lines = ['hive — a durable actor runtime for teams of LLM agents', '', 'commands:'];
  for (const load of Object.values(LOADERS)) {
    const c = await load();
    lines.push(`  ${c.usage}`, `      ${c.summary}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Exit codes: 0 ok, 1 failure (invalid message, I/O, locked), 2 usage error. */
export function exitCodeOf(err: unknown): number {
  return isHiveError(err, 'E_BAD_ARGS') ? 2 : 1;
}

/**
 * Runs one CLI invocation and returns its exit code. Never throws.
 * @example process.exitCode = await runCli(['send', '--root', dir, '--from', 'a', '--to', 'b', '--body', 'hi'])
 */
export async function runCli(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.out(await helpText());
    return name === undefined ? 2 : 0;
  }
  const family = Object.hasOwn(SUBCOMMANDS, name) && rest[0] !== undefined ? await SUBCOMMANDS[name]!() : [];
  const sub = family.find((c) => c.name === `${name} ${rest[0]}`);
  if (sub) rest.shift();
  const load = Object.hasOwn(LOADERS, name) ? LOADERS[name] : undefined;
  if (!sub && !load) {
    io.err(`hive: unknown command ${JSON.stringify(name)}\n\n${await helpText()}`);
    return 2;
  }
  const command = sub ?? (await load!());
  try {
    const args = parseCommandArgs(command, rest);
    return await command.run(args, io);
  } catch (err) {
    const code = isHiveError(err) ? ` [${(err as HiveError).code}]` : '';
    io.err(`${terminalText(errorMessage(err))}${code}\n`); // messages quote names found in the hive
    return exitCodeOf(err);
  }
}
