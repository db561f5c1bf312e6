import { badArgs, type Command } from '../args.ts';
import { memoryAddCommand } from './memory-add.ts';
import { memorySearchCommand, memoryStatusCommand } from './memory-search.ts';
import { memoryCondenseCommand, memoryMineCommand } from './memory-mine.ts';

/** `hive memory add|search|status|mine|condense`: each is a command of its own. */
export const MEMORY_SUBCOMMANDS: Command[] = [memoryAddCommand, memorySearchCommand, memoryStatusCommand, memoryMineCommand, memoryCondenseCommand];

/** `hive memory` without (or with an unknown) subcommand: a usage error listing them. */
export const memoryCommand: Command = {
  name: 'memory',
  summary: 'memory.md, search, the miner and the reflector: add | search | status | mine | condense',
  usage: 'hive memory add|search|status|mine|condense ...',
  options: {},
  positionals: [0, 1],
  async run(args) {
    const sub = args.positionals[0];
    throw badArgs(this, `${sub === undefined ? 'missing a subcommand' : `unknown subcommand ${JSON.stringify(sub)}`}; expected one of:\n${MEMORY_SUBCOMMANDS.map((c) => `  ${c.usage}`).join('\n')}`);
  },
};
