import path from 'node:path';
import { loadConfig } from '../../config/load.ts';
import { runChaos, formatReport } from '../../chaos/engine.ts';
import { JSON_OPTION, int, str, type Command } from '../args.ts';

export const chaosCommand: Command = {
  name: 'chaos',
  summary: "run a workload on a copy of a hive while injecting faults from a seed; check that nothing was lost or duplicated (exit 1 if an invariant fails)",
  usage: 'hive chaos --config FILE [--duration S] [--seed N] [--json] [--keep DIR]',
  options: { config: { type: 'string' }, duration: { type: 'string' }, seed: { type: 'string' }, keep: { type: 'string' }, ...JSON_OPTION },
  async run(args, io) {
    const file = path.resolve(io.cwd, str(args, 'config') ?? 'hive.config.ts');
    const config = await loadConfig(file);
    const seed = str(args, 'seed') === undefined ? Math.floor(Math.random() * 2 ** 31) : int(args, 'seed', this, 1, 0);
    const durationMs = int(args, 'duration', this, 30) * 1000;
    const keep = str(args, 'keep');
    const report = await runChaos({
      config,
      durationMs,
      seed,
      ...(keep ? { root: path.resolve(io.cwd, keep) } : {}),
      log: args.values.json ? () => undefined : (line) => io.err(`${line}\n`),
    });
    io.out(args.values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return report.ok ? 0 : 1;
  },
};
