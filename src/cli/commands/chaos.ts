import path from 'node:path';
import { loadConfig } from '../../config/load.ts';
import { runChaos, formatReport } from '../../chaos/engine.ts';
import { formatMachineReport, runMachineChaos } from '../../chaos/machines.ts';
import { JSON_OPTION, badArgs, int, str, type Command } from '../args.ts';
import { PLANTS, type PlantName } from '../../testing/seams.ts';

export const chaosCommand: Command = {
  name: 'chaos',
  summary: "run a workload on a copy of a hive while injecting faults from a seed; check that nothing was lost or duplicated (exit 1 if an invariant fails)",
  usage: 'hive chaos --config FILE [--duration S] [--seed N] [--machines N] [--plant NAME] [--json] [--keep DIR]   (--machines: the hive over N machines on a nats-server cluster on loopback, machines killed and frozen; --plant: run with a deliberately broken step, which must make the run fail)',
  options: { config: { type: 'string' }, duration: { type: 'string' }, seed: { type: 'string' }, keep: { type: 'string' }, machines: { type: 'string' }, plant: { type: 'string' }, ...JSON_OPTION },
  async run(args, io) {
    const file = path.resolve(io.cwd, str(args, 'config') ?? 'hive.config.ts');
    const config = await loadConfig(file);
    const seed = str(args, 'seed') === undefined ? Math.floor(Math.random() * 2 ** 31) : int(args, 'seed', this, 1, 0);
    const durationMs = int(args, 'duration', this, 30) * 1000;
    const keep = str(args, 'keep');
    const plantArg = str(args, 'plant');
    if (plantArg !== undefined && !(PLANTS as readonly string[]).includes(plantArg)) throw badArgs(this, `expected --plant to be one of ${PLANTS.join(', ')}, got ${JSON.stringify(plantArg)}`);
    const plant = plantArg as PlantName | undefined;
    if (str(args, 'machines') !== undefined) {
      const agents = config.agents.filter((a) => a.brain.kind !== 'human' && a.brain.kind !== 'external').map((a) => a.id);
      const r = await runMachineChaos({
        agents,
        machines: int(args, 'machines', this, 3, 2),
        durationMs,
        seed,
        ...(plant ? { plant } : {}),
        ...(keep ? { root: path.resolve(io.cwd, keep) } : {}),
        log: args.values.json ? () => undefined : (line) => io.err(`${line}\n`),
      });
      io.out(args.values.json ? `${JSON.stringify(r, null, 2)}\n` : formatMachineReport(r));
      return r.ok ? 0 : 1;
    }
    const report = await runChaos({
      config,
      durationMs,
      seed,
      ...(plant ? { plant } : {}),
      ...(keep ? { root: path.resolve(io.cwd, keep) } : {}),
      log: args.values.json ? () => undefined : (line) => io.err(`${line}\n`),
    });
    io.out(args.values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return report.ok ? 0 : 1;
  },
};
