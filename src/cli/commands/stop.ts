import { controlRequest } from '../../supervisor/control.ts';
import { updateRegistry } from '../../registry/registry.ts';
import { HiveError, isHiveError } from '../../errors.ts';
import { JSON_OPTION, ROOT_OPTION, rootOf, type Command } from '../args.ts';

export const stopCommand: Command = {
  name: 'stop',
  summary: "stop an agent's actor (it stays stopped until spawned again)",
  usage: 'hive stop AGENT --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const id = args.positionals[0]!;
    try {
      await controlRequest(root, { op: 'stop', id });
    } catch (err) {
      if (!isHiveError(err, 'E_NOT_FOUND')) throw err;
      await updateRegistry(root, (r) => {
        if (!r.agents[id]) throw new HiveError('E_UNKNOWN_AGENT', `No agent "${id}" in ${root}`);
        r.agents[id]!.status = 'stopped';
      });
    }
    io.out(args.values.json ? `${JSON.stringify({ stopped: id })}\n` : `stopped ${id}\n`);
    return 0;
  },
};
