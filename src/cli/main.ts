import { HiveError, errorMessage, isHiveError } from '../errors.ts';
import { parseCommandArgs, rootChoice, type Command } from './args.ts';
import { processIO, type CliIO } from './io.ts';
import { terminalText } from './terminal.ts';
import { packageVersion } from '../package-files.ts';
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
  'dead-letter': async () => (await import('./commands/dead-letter.ts')).deadLetterCommand,
  mcp: async () => (await import('./commands/mcp.ts')).mcpCommand,
  doctor: async () => (await import('./commands/doctor.ts')).doctorCommand,
};

/** Two-word commands (`hive memory add ...`), loaded with their family. */
const SUBCOMMANDS: Record<string, () => Promise<Command[]>> = {
  memory: async () => (await import('./commands/memory.ts')).MEMORY_SUBCOMMANDS,
  'dead-letter': async () => (await import('./commands/dead-letter.ts')).DEAD_LETTER_SUBCOMMANDS,
};

const COMMAND_NAMES = Object.keys(LOADERS);

async function helpText(): Promise<string> {
  const lines = ['hive — a durable actor runtime for teams of LLM agents', '', 'commands:'];
  for (const load of Object.values(LOADERS)) {
    const c = await load();
    lines.push(`  ${c.usage}`, `      ${c.summary}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `hive <command> --help`: its usage, what it does, and its options. */
function commandHelp(command: Command): string {
  const options = Object.entries(command.options).map(([flag, o]) => `  --${flag}${o.type === 'string' ? ' VALUE' : ''}${o.multiple ? ' (repeatable)' : ''}`);
  return `usage: ${command.usage}\n\n${command.summary}\n${options.length > 0 ? `\noptions:\n${options.join('\n')}\n` : ''}`;
}

/** The known name nearest to a mistyped one (at most 2 edits), or null. */
function closest(name: string, names: string[]): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const candidate of names) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * For the `hive` process itself (bin/hive.mjs): the command's exit code, and a safety net.
 * When something left open (a reconnecting socket, a timer) still keeps the process alive
 * `graceMs` after the command ended, it is named on stderr and the process exits: a
 * stopped `hive start` must end (a chaos run over machines once waited for ever on one).
 */
export function endProcess(code: number, graceMs = 5_000): void {
  process.exitCode = code;
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap');
    process.stderr.write(`hive: still running ${graceMs / 1000} s after the command ended (open: ${open.join(', ') || 'nothing named'}); exiting\n`);
    process.exit(code);
  }, graceMs).unref();
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
  if (name === '--version' || name === '-V' || name === 'version') {
    io.out(`${packageVersion()}\n`);
    return 0;
  }
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.out(await helpText());
    return name === undefined ? 2 : 0;
  }
  const family = Object.hasOwn(SUBCOMMANDS, name) && rest[0] !== undefined ? await SUBCOMMANDS[name]!() : [];
  const sub = family.find((c) => c.name === `${name} ${rest[0]}`);
  if (sub) rest.shift();
  const load = Object.hasOwn(LOADERS, name) ? LOADERS[name] : undefined;
  if (!sub && !load) {
    const near = closest(name, COMMAND_NAMES);
    io.err(`hive: unknown command ${JSON.stringify(name)}${near ? ` (did you mean \`hive ${near}\`?)` : ''}; \`hive --help\` lists them\n`);
    return 2;
  }
  const command = sub ?? (await load!());
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(commandHelp(command));
    return 0;
  }
  try {
    const args = parseCommandArgs(command, rest);
    return await command.run(args, io);
  } catch (err) {
    const code = isHiveError(err) ? ` [${(err as HiveError).code}]` : '';
    // Not a hive where it looked: say how that root was chosen (flag, environment, walk).
    const where = isHiveError(err, 'E_NOT_A_HIVE') && rootChoice ? ` (root ${rootChoice.root}: ${rootChoice.how})` : '';
    io.err(`${terminalText(errorMessage(err))}${where}${code}\n`); // messages quote names found in the hive
    return exitCodeOf(err);
  }
}
