import fs from 'node:fs';
import path from 'node:path';
import { MACHINES, isMachineName, machineGraph } from '../../inspector/machine-graph.ts';
import { renderMachineSvg } from '../../inspector/diagram.ts';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { agentMachineSvg } from '../../inspector/agent-machine.ts';
import { JSON_OPTION, ROOT_OPTION, agentArg, badArgs, rootOf, str, type Command } from '../args.ts';

export const diagramCommand: Command = {
  name: 'diagram',
  summary: `write a machine's state diagram as SVG (machines: ${Object.keys(MACHINES).join(', ')})`,
  usage: `hive diagram MACHINE --out FILE.svg [--json]   (MACHINE: ${Object.keys(MACHINES).join(' | ')})\n       hive diagram --agent ID [--root DIR] --out FILE.svg [--json]   (a machine agent's own machine)`,
  options: { out: { type: 'string' }, agent: { type: 'string' }, ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [0, 1],
  async run(args, io) {
    const name = args.positionals[0];
    const agent = agentArg(this, str(args, 'agent'), '--agent');
    if (name !== undefined && agent !== undefined) throw badArgs(this, 'give a MACHINE or --agent ID, not both');
    if (name === undefined && agent === undefined) throw badArgs(this, `missing MACHINE (${Object.keys(MACHINES).join(', ')}) or --agent ID`);
    if (name !== undefined && !isMachineName(name)) throw badArgs(this, `unknown machine ${JSON.stringify(name)}; expected one of ${Object.keys(MACHINES).join(', ')}`);
    const out = str(args, 'out');
    if (!out) throw badArgs(this, 'missing --out FILE.svg');
    const file = path.resolve(io.cwd, out);
    let svg: string;
    if (agent !== undefined) {
      const root = rootOf(args, io);
      const own = await agentMachineSvg(root, agent);
      if (!own) throw badArgs(this, `agent ${agent} has no machine of its own in ${root} (agents/${agent}/machine.json is written when a machine agent starts)`);
      svg = own;
    } else svg = await renderMachineSvg(machineGraph(MACHINES[name as keyof typeof MACHINES]), { title: `${name} machine` });
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, svg, { durable: false });
    io.out(args.values.json ? `${JSON.stringify(agent !== undefined ? { agent, file } : { machine: name, file })}\n` : `${file}\n`);
    return 0;
  },
};
