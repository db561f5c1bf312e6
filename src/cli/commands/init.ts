import { ensureHive } from '../../layout/ensure.ts';
import { ROOT_OPTION, rootOf, type Command } from '../args.ts';

export const initCommand: Command = {
  name: 'init',
  summary: 'create a hive folder (idempotent)',
  usage: 'hive init [--root DIR]',
  options: { ...ROOT_OPTION },
  async run(args, io) {
    const root = rootOf(args, io);
    await ensureHive(root);
    io.out(`hive ready at ${root}\n`);
    return 0;
  },
};
