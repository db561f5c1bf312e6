import { requireAgent } from '../../layout/ensure.ts';
import { inboxRows, openToolTransport } from '../../queue/tool-transport.ts';
import { listDeadLetters } from '../../queue/dead-letter.ts';
import { JSON_OPTION, ROOT_OPTION, agentArg, rootOf, type Command } from '../args.ts';
import { terminalLine } from '../terminal.ts';

export const inboxCommand: Command = {
  name: 'inbox',
  summary: "list an agent's delivered messages with their seq and processing state",
  usage: 'hive inbox AGENT --root DIR [--json]',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const agent = agentArg(this, args.positionals[0]!);
    requireAgent(root, agent);
    // Through the transport: in cluster mode the inbox is a JetStream stream, wherever the agent runs.
    const transport = await openToolTransport(root);
    let cursor: number;
    let inbox: Awaited<ReturnType<typeof inboxRows>>;
    try {
      [cursor, inbox] = await Promise.all([transport.cursor(agent), inboxRows(transport, agent)]);
    } finally {
      transport.close();
    }
    // Passed by the cursor because it was dead-lettered as poison, not handled.
    const poisoned = new Set(listDeadLetters(root).flatMap((d) => (d.reason?.code === 'E_POISON' && d.reason.agent === agent ? [d.name.replace(`poison-${agent}-`, '')] : [])));
    const rows = inbox.map((r) => {
      const m = r.message;
      const state = poisoned.has(`${String(r.seq).padStart(12, '0')}-${r.id}.json`) ? 'poisoned' : r.seq <= cursor ? 'done' : 'pending';
      return {
        seq: r.seq,
        id: r.id,
        processed: r.seq <= cursor,
        state,
        from: m?.from ?? null,
        act: m?.act ?? null,
        subject: m?.subject ?? null,
        body: m?.body ?? null,
      };
    });
    if (args.values.json) {
      io.out(`${JSON.stringify({ agent, cursor, messages: rows }, null, 2)}\n`);
      return 0;
    }
    io.out(`${agent}: ${rows.length} message(s), cursor at ${cursor}\n`);
    for (const r of rows) {
      const mark = r.state.padEnd(8);
      const text = terminalLine((r.subject || r.body || '').slice(0, 60));
      io.out(`${String(r.seq).padStart(6)}  ${mark}  ${terminalLine(r.from ?? '?')} ${terminalLine(r.act ?? '?')}  ${text}\n`);
    }
    return 0;
  },
};
