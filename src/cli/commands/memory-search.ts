import { searchMemory } from '../../memory/search.ts';
import { memoryStatus } from '../../memory/status.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, int, str, type Command, agentArg } from '../args.ts';
import { memoryRoot } from './memory-args.ts';
import { terminalLine } from '../terminal.ts';

export const memorySearchCommand: Command = {
  name: 'memory search',
  summary: "search the hive's memories (MemPalace, the built-in index, or plain text)",
  usage: 'hive memory search QUERY [--agent ID] [--limit N] [--no-mempalace] [--json] [--root DIR]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, agent: { type: 'string' }, limit: { type: 'string' }, 'no-mempalace': { type: 'boolean' } },
  positionals: [1, 1],
  async run(args, io) {
    const query = args.positionals[0]!;
    if (!query.trim()) throw badArgs(this, 'expected QUERY to contain some text');
    const agent = agentArg(this, str(args, 'agent'), '--agent');
    const limit = int(args, 'limit', this, 5);
    if (limit > 100) throw badArgs(this, `expected --limit to be at most 100, got ${JSON.stringify(str(args, 'limit'))}`);
    const root = memoryRoot(args, io);
    const r = await searchMemory(root, query, { limit, ...(agent !== undefined ? { agent } : {}), ...(args.values['no-mempalace'] ? { mempalace: false } : {}) });
    if (args.values.json) {
      io.out(`${JSON.stringify(r, null, 2)}\n`);
      return 0;
    }
    io.out(`source: ${r.source}${r.matches.length === 0 ? ' (no matches)' : ''}\n`);
    r.matches.forEach((m, i) => {
      io.out(`${String(i + 1).padStart(2)}. ${m.agent} · ${terminalLine(m.heading)}  (score ${m.score})\n    ${terminalLine(m.excerpt)}\n`);
    });
    return 0;
  },
};

export const memoryStatusCommand: Command = {
  name: 'memory status',
  summary: 'the palace: ready?, backend, last mine, indexed agents, documents',
  usage: 'hive memory status [--json] [--root DIR]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  async run(args, io) {
    const s = memoryStatus(memoryRoot(args, io));
    if (args.values.json) {
      io.out(`${JSON.stringify(s, null, 2)}\n`);
      return 0;
    }
    io.out(
      [
        `palace ready:   ${s.palaceReady ? 'yes' : 'no (searches use plain text)'}`,
        `backend:        ${s.backend}${s.mempalace ? ` (${s.mempalace})` : ''}`,
        `last mine:      ${s.lastMineTime ?? 'never'}`,
        `indexed agents: ${s.indexedAgents.length > 0 ? s.indexedAgents.join(', ') : '-'}`,
        `documents:      ${s.documents}`,
        '',
      ].join('\n'),
    );
    return 0;
  },
};
