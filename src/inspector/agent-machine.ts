import { createHash } from 'node:crypto';
import { HiveError } from '../errors.ts';
import { assertAgentId } from '../protocol/agent-id.ts';
import { agentPaths } from '../layout/paths.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { renderMachineSvg } from './diagram.ts';
import type { MachineGraph } from './machine-graph.ts';

/**
 * A machine agent's own machine, as its worker wrote it at start (`agents/<id>/machine.json`:
 * the module, the export and the graph of the definition). Read from the hive folder, so
 * `hive diagram --agent` and the inspector draw it with or without a running hive.
 */
export interface AgentMachineFile {
  module: string;
  export: string;
  graph: MachineGraph;
}

export function readAgentMachine(root: string, agentId: string): AgentMachineFile | null {
  assertAgentId(agentId);
  let text: string;
  try {
    text = readRegularFile(`${agentPaths(root, agentId).dir}/machine.json`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<AgentMachineFile>;
  if (!parsed.graph || !Array.isArray(parsed.graph.states) || !Array.isArray(parsed.graph.transitions)) {
    throw new HiveError('E_IO', `agents/${agentId}/machine.json holds no machine graph`);
  }
  return parsed as AgentMachineFile;
}

const drawn = new Map<string, Promise<string>>();

/**
 * The agent's machine as SVG (the offline renderer of the built-in diagrams), or null for an
 * agent that is no machine. `holdProcess: false` (a server, which keeps the process alive
 * while a page waits): a process stopping meanwhile does not wait for the layout.
 */
export async function agentMachineSvg(root: string, agentId: string, options: { holdProcess?: boolean } = {}): Promise<string | null> {
  const file = readAgentMachine(root, agentId);
  if (!file) return null;
  // The SVG names the agent (its title, its marker ids): one per agent, even for agents of one module.
  const key = `${agentId}:${createHash('sha256').update(JSON.stringify(file.graph)).digest('hex')}`;
  let svg = drawn.get(key);
  if (!svg) {
    svg = renderMachineSvg(file.graph, { idPrefix: `a-${agentId}`, title: `${agentId}: ${file.graph.id}`, holdProcess: options.holdProcess ?? true });
    drawn.set(key, svg);
    svg.catch(() => drawn.delete(key));
  }
  return svg;
}
