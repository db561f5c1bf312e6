import { familyCommand, type Command } from '../args.ts';
import { memoryAddCommand } from './memory-add.ts';
import { memorySearchCommand, memoryStatusCommand } from './memory-search.ts';
import { memoryCondenseCommand, memoryMineCommand } from './memory-mine.ts';

/** `hive memory add|search|status|mine|condense`: each is a command of its own. */
export const MEMORY_SUBCOMMANDS: Command[] = [memoryAddCommand, memorySearchCommand, memoryStatusCommand, memoryMineCommand, memoryCondenseCommand];

export const memoryCommand = familyCommand('memory', 'memory.md, search, the miner and the reflector', () => MEMORY_SUBCOMMANDS);
