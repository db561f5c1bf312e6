import fs from 'node:fs';
import path from 'node:path';
import { MACHINES, isMachineName, machineGraph } from '../../inspector/machine-graph.ts';
import { renderMachineSvg } from '../../inspector/diagram.ts';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { JSON_OPTION, badArgs, str, type Command } from '../args.ts';

export const diagramCommand: Command = {
  name: 'diagram',
  summary: `write a machine's state diagram as SVG (machines: ${Object.keys(MACHINES).join(', ')})`,
  usage: `hive diagram MACHINE --out FILE.svg [--json]   (MACHINE: ${Object.keys(MACHINES).join(' | ')})`,
  options: { out: { type: 'string' }, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const name = args.positionals[0]!;
    if (!isMachineName(name)) throw badArgs(this, `unknown machine ${JSON.stringify(name)}; expected one of ${Object.keys(MACHINES).join(', ')}`);
    const out = str(args, 'out');
    if (!out) throw badArgs(this, 'missing --out FILE.svg');
    const file = path.resolve(io.cwd, out);
    const svg = await renderMachineSvg(machineGraph(MACHINES[name]), { title: `${name} machine` });
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, svg, { durable: false });
    io.out(args.values.json ? `${JSON.stringify({ machine: name, file })}\n` : `${file}\n`);
    return 0;
  },
};
