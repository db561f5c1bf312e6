import fs from 'node:fs';
import { ACTS, parseMessage } from '../../protocol/message.ts';
import { agentPaths } from '../../layout/paths.ts';
import { requireHive } from '../../layout/ensure.ts';
import { writeOutbox } from '../../queue/outbox.ts';
import { HiveError } from '../../errors.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, rootOf, str, type Command } from '../args.ts';
import { readAll } from '../io.ts';

export const sendCommand: Command = {
  name: 'send',
  summary: "write a message into an agent's outbox (durable; no supervisor needed)",
  usage:
    'hive send --root DIR --from A --to B [--act ACT] [--subject S] [--body TEXT | --body -] [--needs-human] [--conversation C] [--in-reply-to ID] [--json]',
  options: {
    ...ROOT_OPTION,
    ...JSON_OPTION,
    from: { type: 'string' },
    to: { type: 'string' },
    act: { type: 'string' },
    subject: { type: 'string' },
    body: { type: 'string' },
    'needs-human': { type: 'boolean' },
    conversation: { type: 'string' },
    'in-reply-to': { type: 'string' },
  },
  async run(args, io) {
    const root = rootOf(args, io);
    for (const required of ['from', 'to', 'body']) {
      if (str(args, required) === undefined) throw badArgs(this, `missing --${required}`);
    }
    const act = str(args, 'act') ?? 'inform';
    if (!(ACTS as readonly string[]).includes(act)) {
      throw badArgs(this, `expected --act to be one of ${ACTS.join(', ')}, got ${JSON.stringify(act)}`);
    }
    let body = str(args, 'body')!;
    if (body === '-') body = await readAll(io.stdin);
    const input: Record<string, unknown> = { from: str(args, 'from'), to: str(args, 'to'), act, body };
    if (str(args, 'subject') !== undefined) input.subject = str(args, 'subject');
    if (args.values['needs-human']) input.needs_human = true;
    if (str(args, 'conversation') !== undefined) input.conversation = str(args, 'conversation');
    if (str(args, 'in-reply-to') !== undefined) input.in_reply_to = str(args, 'in-reply-to');
    const parsed = parseMessage(input);
    if (!parsed.ok) throw parsed.error;
    requireHive(root);
    if (!fs.existsSync(agentPaths(root, parsed.message.from).dir)) {
      throw new HiveError('E_UNKNOWN_AGENT', `Agent "${parsed.message.from}" does not exist in ${root}; spawn it first`);
    }
    writeOutbox(root, [parsed.message]);
    io.out(args.values.json ? `${JSON.stringify({ id: parsed.message.id, conversation: parsed.message.conversation, created_at: parsed.message.created_at })}\n` : `${parsed.message.id}\n`);
    return 0;
  },
};
