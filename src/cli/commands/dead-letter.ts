import { listDeadLetters } from '../../queue/dead-letter.ts';
import { deadLetterNames, discardDeadLetters, retryDeadLetters, showDeadLetter } from '../../queue/dead-letter-tools.ts';
import { controlRequest } from '../../supervisor/control.ts';
import { requireHive } from '../../layout/ensure.ts';
import { JSON_OPTION, ROOT_OPTION, badArgs, familyCommand, rootOf, str, type Command } from '../args.ts';
import { terminalLine, terminalText } from '../terminal.ts';

/** Tells a running hive's router to look at these senders' outboxes (none running: its watcher or next start does). */
async function kick(root: string, senders: string[]): Promise<void> {
  await controlRequest(root, { op: 'kick', senders }, 2_000).catch(() => undefined);
}

const listCommand: Command = {
  name: 'dead-letter list',
  summary: 'list dead letters with their reasons, oldest first',
  usage: 'hive dead-letter list [--code CODE] [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, code: { type: 'string' } },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const code = str(args, 'code');
    const items = listDeadLetters(root).filter((d) => code === undefined || d.reason?.code === code);
    if (args.values.json) {
      io.out(`${JSON.stringify({ deadLetters: items }, null, 2)}\n`);
      return 0;
    }
    if (items.length === 0) io.out('no dead letters\n');
    for (const d of items) io.out(`${terminalLine(d.name)}\n  ${terminalLine(d.reason?.code ?? '?')}  ${terminalLine(d.reason?.error ?? '(no reason file)')}\n`);
    return 0;
  },
};

const showCommand: Command = {
  name: 'dead-letter show',
  summary: 'one dead letter: its reason, its content and the message it holds',
  usage: 'hive dead-letter show NAME [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const d = showDeadLetter(root, args.positionals[0]!);
    if (args.values.json) io.out(`${JSON.stringify(d, null, 2)}\n`);
    else io.out(`${terminalLine(d.name)}\nreason: ${terminalText(JSON.stringify(d.reason, null, 2))}\n${d.message ? 'message' : `not a valid message (${terminalLine(d.invalid ?? '')})`}:\n${terminalText(d.content)}\n`);
    return 0;
  },
};

const retryCommand: Command = {
  name: 'dead-letter retry',
  summary: 'send dead letters again, each as a new message from its sender (exactly once), and archive them',
  usage: 'hive dead-letter retry NAME... | --all [--code CODE] [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, all: { type: 'boolean' }, code: { type: 'string' } },
  positionals: [0, 1_000],
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const all = args.values.all === true;
    if (all === args.positionals.length > 0) throw badArgs(this, 'give dead letter names or --all, not both and not neither');
    if (!all && str(args, 'code') !== undefined) throw badArgs(this, '--code goes with --all');
    const names = all ? deadLetterNames(root, str(args, 'code')) : args.positionals;
    const retried = retryDeadLetters(root, names);
    await kick(root, [...new Set(retried.map((r) => r.message.from))]);
    if (args.values.json) io.out(`${JSON.stringify({ retried: retried.map((r) => ({ name: r.name, id: r.message.id, from: r.message.from, to: r.message.to })) }, null, 2)}\n`);
    else for (const r of retried) io.out(`retried ${terminalLine(r.name)} as ${r.message.id} (${terminalLine(r.message.from)} → ${terminalLine(r.message.to)})\n`);
    return 0;
  },
};

const discardCommand: Command = {
  name: 'dead-letter discard',
  summary: 'move dead letters to dead-letter/.archive/ (never deleted)',
  usage: 'hive dead-letter discard NAME... [--root DIR] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1_000],
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    discardDeadLetters(root, args.positionals);
    io.out(args.values.json ? `${JSON.stringify({ discarded: args.positionals })}\n` : `discarded ${args.positionals.length} (kept in dead-letter/.archive/)\n`);
    return 0;
  },
};

export const DEAD_LETTER_SUBCOMMANDS: Command[] = [listCommand, showCommand, retryCommand, discardCommand];

export const deadLetterCommand = familyCommand('dead-letter', 'dead letters', () => DEAD_LETTER_SUBCOMMANDS);
