import { listQuestions, answerQuestion } from '../../human/questions.ts';
import { inboxRows, openToolTransport } from '../../queue/tool-transport.ts';
import { GOD_ID } from '../../protocol/agent-id.ts';
import { controlRequest } from '../../supervisor/control.ts';
import { isHiveError } from '../../errors.ts';
import { requireHive } from '../../layout/ensure.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, rootOf, str, type Command } from '../args.ts';
import { readAll } from '../io.ts';
import { terminalLine, terminalText } from '../terminal.ts';

export const askCommand: Command = {
  name: 'ask',
  summary: 'list open questions for the people in the loop (ASK ME cards)',
  usage: 'hive ask --root DIR [--all] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, all: { type: 'boolean' } },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    // God's inbox through the transport: in cluster mode it is a JetStream stream.
    const transport = await openToolTransport(root);
    let inbox;
    try {
      inbox = await inboxRows(transport, GOD_ID);
    } finally {
      transport.close();
    }
    const questions = listQuestions(root, { open: !args.values.all, inbox });
    if (args.values.json) {
      io.out(`${JSON.stringify({ questions }, null, 2)}\n`);
      return 0;
    }
    if (questions.length === 0) io.out('no open questions\n');
    for (const q of questions) {
      const state = q.state === 'withdrawn' ? `  (withdrawn: ${terminalLine(q.withdrawn?.reason ?? '')})` : q.state === 'answered' ? '  (answered)' : '';
      io.out(`ASK ME ${terminalLine(q.id)}  from ${terminalLine(q.from)}${state}\n  ${terminalText(`${q.subject ? `${q.subject}: ` : ''}${q.body}`).replace(/\n/g, '\n  ')}\n`);
    }
    return 0;
  },
};

export const answerCommand: Command = {
  name: 'answer',
  summary: 'answer a question: the reply goes into the same conversation and unblocks the asker',
  usage: 'hive answer ID --body TEXT|- [--root DIR] [--again] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, body: { type: 'string' }, again: { type: 'boolean' } },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    let body = str(args, 'body');
    if (body === undefined) throw badArgs(this, 'missing --body');
    if (body === '-') body = await readAll(io.stdin);
    const id = args.positionals[0]!;
    const again = args.values.again === true;
    let answer: string;
    try {
      answer = (await controlRequest<{ id: string }>(root, { op: 'answer', question: id, body, again })).id;
    } catch (err) {
      if (!isHiveError(err, 'E_NOT_FOUND') || !/Nothing listens/.test((err as Error).message)) throw err;
      answer = answerQuestion(root, id, body, { again }).id;
    }
    io.out(args.values.json ? `${JSON.stringify({ id: answer, question: id })}\n` : `${answer}\n`);
    return 0;
  },
};
