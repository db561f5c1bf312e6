import { ensureHive } from '../../layout/ensure.ts';
import { JSON_OPTION, ROOT_OPTION, rootOf, type Command } from '../args.ts';

export const initCommand: Command = {
  name: 'init',
  summary: 'create a hive folder (idempotent)',
  usage: 'hive init [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  async run(args, io) {
    const root = rootOf(args, io, { discover: false });
    await ensureHive(root);
    io.out(args.values.json ? `${JSON.stringify({ root })}\n` : `hive ready at ${root}\n`);
    return 0;
  },
};
