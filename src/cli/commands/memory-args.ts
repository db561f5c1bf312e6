import path from 'node:path';
import { loadConfig } from '../../config/load.ts';
import { MemoryConfigSchema, type MemoryConfig } from '../../memory/config.ts';
import { requireHive } from '../../layout/ensure.ts';
import { badArgs, rootOf, str, type Command, type ParsedArgs } from '../args.ts';
import type { CliIO } from '../io.ts';

/** The hive root of a memory command (it must be a hive). */
export function memoryRoot(args: ParsedArgs, io: CliIO): string {
  const root = rootOf(args, io);
  requireHive(root);
  return root;
}

/** The memory settings: from `--config FILE` (its root too, unless --root), else the defaults. */
export async function memorySetup(command: Command, args: ParsedArgs, io: CliIO): Promise<{ root: string; memory: MemoryConfig; configDir: string }> {
  const file = str(args, 'config');
  if (file === undefined) return { root: memoryRoot(args, io), memory: MemoryConfigSchema.parse({}), configDir: io.cwd };
  const config = await loadConfig(path.resolve(io.cwd, file)).catch((err: unknown) => {
    throw badArgs(command, `--config ${file}: ${(err as Error).message}`);
  });
  const root = str(args, 'root') !== undefined ? memoryRoot(args, io) : config.root;
  requireHive(root);
  return { root, memory: config.memory, configDir: config.configDir };
}
