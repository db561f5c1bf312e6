import path from 'node:path';
import { requireAgent } from '../../layout/ensure.ts';
import { readRegistry } from '../../registry/registry.ts';
import { agentPaths } from '../../layout/paths.ts';
import { PRESET, commandOf, type PresetName } from '../../brains/presets.ts';
import { findProgram } from '../../brains/preflight.ts';
import { configFiles, expectedEntryCount, installedCliConfig } from '../../brains/cli-install.ts';
import { providerBinDir } from '../../package-files.ts';
import { JSON_OPTION, ROOT_OPTION, agentArg, rootOf, type Command } from '../args.ts';

/** `hive doctor AGENT`: what Hive installed for an agent CLI and whether that CLI can run. Exit 1 when something is missing. */
export const doctorCommand: Command = {
  name: 'doctor',
  summary: "check an agent's CLI: its program on PATH, the hook and MCP entries Hive installed for it",
  usage: 'hive doctor AGENT [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const id = agentArg(this, args.positionals[0]!);
    requireAgent(root, id);
    const brain = (readRegistry(root).agents[id]?.brain ?? {}) as { kind?: string; preset?: PresetName; command?: string; cwd?: string; env?: Record<string, string> };
    const program = brain.kind === 'command' ? commandOf(brain) : null;
    const found = program ? findProgram(program, brain.env?.PATH ?? io.env.PATH ?? '') : null;
    const cwd = brain.cwd ?? agentPaths(root, id).dir;
    const installed = brain.preset ? installedCliConfig({ preset: brain.preset, cwd, root, agentId: id, hive: path.join(providerBinDir(), 'hive') }) : [];
    const expected = brain.preset ? expectedEntryCount(brain.preset) : 0;
    const report = {
      agent: id,
      brain: brain.kind ?? null,
      preset: brain.preset ?? null,
      program,
      onPath: typeof found === 'string' ? found : null,
      problem: found && typeof found !== 'string' ? found.problem : null,
      cwd,
      files: brain.preset ? configFiles(brain.preset, cwd) : [],
      installed,
    };
    const ok = (program === null || typeof found === 'string') && installed.length >= expected;
    if (args.values.json) {
      io.out(`${JSON.stringify({ ...report, ok }, null, 2)}\n`);
      return ok ? 0 : 1;
    }
    io.out(`${id}: ${brain.kind ?? '?'} brain${brain.preset ? `, preset ${brain.preset} (${PRESET[brain.preset].title})` : ''}\n`);
    if (program) io.out(typeof found === 'string' ? `  ok       ${program} → ${found}\n` : `  missing  ${report.problem}\n`);
    if (brain.preset) {
      io.out(`  cwd      ${cwd}\n`);
      for (const e of installed) io.out(`  ok       ${path.relative(cwd, e.file)}: ${e.entry}\n`);
      if (installed.length < expected) io.out(`  missing  ${expected - installed.length} of Hive's entries (they are written when the agent starts)\n`);
    }
    return ok ? 0 : 1;
  },
};
