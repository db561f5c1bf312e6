import { requireHive } from '../../layout/ensure.ts';
import { auditHistory } from '../../audit/history.ts';
import { JSON_OPTION, ROOT_OPTION, int, rootOf, type Command } from '../args.ts';
import { terminalLine } from '../terminal.ts';

export const auditCommand: Command = {
  name: 'audit',
  summary: "show the hive's git audit trail (significant changes, newest first)",
  usage: 'hive audit --root DIR [--limit N] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, limit: { type: 'string' } },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const entries = await auditHistory(root, int(args, 'limit', this, 100));
    if (args.values.json) {
      io.out(`${JSON.stringify({ root, commits: entries }, null, 2)}\n`);
      return 0;
    }
    if (entries.length === 0) io.out(`${root}: no audit commits yet (they start when the hive runs)\n`);
    for (const e of entries) {
      io.out(`${e.commit.slice(0, 10)}  ${e.at}  ${terminalLine(e.subject)}\n`);
      for (const f of e.files) io.out(`    ${f.status}  ${terminalLine(f.path)}\n`);
    }
    return 0;
  },
};
