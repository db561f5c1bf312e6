import fs from 'node:fs';
import { hivePaths } from '../../layout/paths.ts';
import { requireHive } from '../../layout/ensure.ts';
import { eventConcerns, openLogReader, parseLogLine } from '../../log/read.ts';
import type { LoggedEvent } from '../../log/event-log.ts';
import { JSON_OPTION, ROOT_OPTION, rootOf, str, type Command, agentArg } from '../args.ts';
import { terminalLine } from '../terminal.ts';

/** One event as a text line: time, type, agent, then the remaining fields compactly. */
export function formatEvent(e: LoggedEvent): string {
  const { at, type, agent, pid: _pid, ...rest } = e;
  const who = typeof agent === 'string' ? agent : '';
  const detail = Object.keys(rest).length > 0 ? JSON.stringify(rest) : '';
  return terminalLine(`${String(at).slice(0, 23)}  ${String(type).padEnd(24)} ${who.padEnd(12)} ${detail}`.trimEnd()) + '\n';
}

export const logCommand: Command = {
  name: 'log',
  summary: 'print the event log (log.jsonl and its rotations, oldest first); --follow keeps printing',
  usage: 'hive log --root DIR [--follow] [--agent ID] [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION, follow: { type: 'boolean' }, agent: { type: 'string' } },
  async run(args, io) {
    const root = rootOf(args, io);
    requireHive(root);
    const agentOption = str(args, 'agent');
    const agent = agentOption === undefined ? undefined : agentArg(this, agentOption, '--agent');
    const json = args.values.json === true;
    const print = (line: string) => {
      const e = parseLogLine(line);
      if (!e || (agent && !eventConcerns(e, agent))) return;
      io.out(json ? `${JSON.stringify(e)}\n` : formatEvent(e));
    };
    const reader = openLogReader(root, print);
    if (args.values.follow !== true) {
      reader.close();
      return 0;
    }
    // Follow: file events on the root folder (appends and the rotation's rename), plus a
    // slow poll because fs.watch may coalesce or miss events.
    let watcher: fs.FSWatcher | null = null;
    try {
      watcher = fs.watch(hivePaths(root).root, () => reader.poll());
    } catch {
      watcher = null;
    }
    const poll = setInterval(() => reader.poll(), 250);
    try {
      await io.interrupted;
    } finally {
      clearInterval(poll);
      watcher?.close();
      reader.poll();
      reader.close();
    }
    return 0;
  },
};
