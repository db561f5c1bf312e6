import { remember } from '../../memory/remember.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, str, type Command, agentArg } from '../args.ts';
import { readAll } from '../io.ts';
import { memoryRoot } from './memory-args.ts';

export const memoryAddCommand: Command = {
  name: 'memory add',
  summary: "append an entry to an agent's memory.md (durable, under the file's lock)",
  usage: 'hive memory add AGENT [TEXT] [--title T] [--body TEXT | --body -] [--pinned] [--date YYYY-MM-DD] [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, title: { type: 'string' }, body: { type: 'string' }, pinned: { type: 'boolean' }, date: { type: 'string' } },
  positionals: [1, 2],
  async run(args, io) {
    const agent = agentArg(this, args.positionals[0], 'AGENT')!;
    const text = args.positionals[1];
    let body = str(args, 'body');
    if (text !== undefined && body !== undefined) throw badArgs(this, 'give the text either as TEXT or with --body, not both');
    if (body === '-') body = await readAll(io.stdin);
    body ??= text;
    const title = str(args, 'title');
    if (body === undefined && title === undefined) throw badArgs(this, 'missing the text: give TEXT, --body or --title');
    const date = str(args, 'date');
    if (date !== undefined && (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(Date.parse(date)))) {
      throw badArgs(this, `expected --date to be a date as YYYY-MM-DD, got ${JSON.stringify(date)}`);
    }
    const root = memoryRoot(args, io);
    const entry = title !== undefined ? { title, body: body ?? '' } : body!;
    const r = await remember(root, agent, entry, { pinned: args.values.pinned === true, ...(date !== undefined ? { date } : {}) });
    io.out(args.values.json ? `${JSON.stringify(r)}\n` : `remembered in agents/${agent}/memory.md (now ${r.size} bytes)\n`);
    return 0;
  },
};
