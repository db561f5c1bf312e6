import { HiveError, errorMessage, isHiveError } from '../errors.ts';
import { parseCommandArgs, type Command } from './args.ts';
import { processIO, type CliIO } from './io.ts';
import { initCommand } from './commands/init.ts';
import { sendCommand } from './commands/send.ts';
import { inboxCommand } from './commands/inbox.ts';
import { startCommand } from './commands/start.ts';
import { statusCommand } from './commands/status.ts';
import { spawnCommand } from './commands/spawn.ts';
import { stopCommand } from './commands/stop.ts';
import { MEMORY_SUBCOMMANDS, memoryCommand } from './commands/memory.ts';

export const COMMANDS: Command[] = [initCommand, startCommand, statusCommand, sendCommand, inboxCommand, spawnCommand, stopCommand, ...MEMORY_SUBCOMMANDS, memoryCommand];

function helpText(): string {
  const lines = ['hive — a durable actor runtime for teams of LLM agents', '', 'commands:'];
  for (const c of COMMANDS) lines.push(`  ${c.usage}`, `      ${c.summary}`);
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
    io.out(helpText());
    return name === undefined ? 2 : 0;
  }
  // Two-word commands first (`hive memory add ...`), then one-word ones.
  const sub = rest[0] !== undefined ? COMMANDS.find((c) => c.name === `${name} ${rest[0]}`) : undefined;
  const command = sub ?? COMMANDS.find((c) => c.name === name);
  if (sub) rest.shift();
  if (!command) {
    io.err(`hive: unknown command ${JSON.stringify(name)}\n\n${helpText()}`);
    return 2;
  }
  try {
    const args = parseCommandArgs(command, rest);
    return await command.run(args, io);
  } catch (err) {
    const code = isHiveError(err) ? ` [${(err as HiveError).code}]` : '';
    io.err(`${errorMessage(err)}${code}\n`);
    return exitCodeOf(err);
  }
}
