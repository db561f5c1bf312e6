import { ensureProviderSummarizers } from '../../brains/summarizers.ts';
import { runMinePass } from '../../memory/mine.ts';
import { condenseAgentMemory } from '../../memory/reflect.ts';
import { createPoolJobs } from '../../memory/pool.ts';
import { condenseSettingsOf, mineSettingsOf, resolveSummarizer } from '../../memory/settings.ts';
import { JSON_OPTION, ROOT_OPTION, type Command, agentArg } from '../args.ts';
import { memorySetup } from './memory-args.ts';
import { terminalLine } from '../terminal.ts';

const CONFIG_OPTION = { config: { type: 'string' } } as const;

export const memoryMineCommand: Command = {
  name: 'memory mine',
  summary: 'mine changed memories into palace/ now (--force: every memory, and a new snapshot)',
  usage: 'hive memory mine [--force] [--config FILE] [--json] [--root DIR]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, ...CONFIG_OPTION, force: { type: 'boolean' } },
  async run(args, io) {
    const { root, memory, configDir } = await memorySetup(this, args, io);
    const jobs = createPoolJobs({ maxThreads: memory.poolThreads });
    try {
      const r = await runMinePass(root, mineSettingsOf(memory, configDir), jobs, { force: args.values.force === true });
      if (args.values.json) io.out(`${JSON.stringify(r, null, 2)}\n`);
      else {
        const what = r.mined.length > 0 ? `mined ${r.mined.length} agent(s): ${r.mined.join(', ')}` : 'nothing changed';
        const mp = r.mempalace.mined.length + r.mempalace.failed.length > 0 ? `; MemPalace mined ${r.mempalace.mined.length}, failed ${r.mempalace.failed.length}` : '';
        io.out(`${what}; ${r.documents} documents in ${r.agents} agents; ${r.ms} ms${r.snapshot ? '; snapshot rebuilt' : ''}${mp}\n`);
      }
      return 0;
    } finally {
      await jobs.close();
    }
  },
};

export const memoryCondenseCommand: Command = {
  name: 'memory condense',
  summary: "condense an agent's memory.md now (backup, verify, atomic swap)",
  usage: 'hive memory condense AGENT [--config FILE] [--json] [--root DIR]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, ...CONFIG_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const agent = agentArg(this, args.positionals[0], 'AGENT')!;
    const { root, memory, configDir } = await memorySetup(this, args, io);
    ensureProviderSummarizers(); // the agent's own provider condenses, as in the reflector
    const jobs = createPoolJobs({ maxThreads: 1 });
    try {
      const r = await condenseAgentMemory(root, agent, { settings: condenseSettingsOf(memory), summarizer: resolveSummarizer(root, agent, memory, configDir), jobs });
      if (args.values.json) io.out(`${JSON.stringify(r, null, 2)}\n`);
      else if (r.status === 'condensed') {
        io.out(`condensed agents/${agent}/memory.md: ${r.before} → ${r.after} bytes (${r.condensed} entries condensed by ${r.summarizer}${r.fallback ? `, fell back: ${r.fallback}` : ''}); backup ${r.backup}\n`);
      } else io.out(`${r.status}: ${terminalLine(r.reason)}\n`);
      return r.status === 'aborted' ? 1 : 0;
    } finally {
      await jobs.close();
    }
  },
};
