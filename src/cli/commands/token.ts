import { requireAgent } from '../../layout/ensure.ts';
import { AGENT_TOKEN_ENV, agentToken } from '../../hooks/agent-token.ts';
import { JSON_OPTION, ROOT_OPTION, rootOf, type Command } from '../args.ts';

export const tokenCommand: Command = {
  name: 'token',
  summary: `print an agent's hooks token (${AGENT_TOKEN_ENV}) for an agent CLI run outside the hive`,
  usage: 'hive token AGENT --root DIR [--json]   (prints: export HIVE_AGENT_TOKEN=...)',
  options: { ...ROOT_OPTION, ...JSON_OPTION },
  positionals: [1, 1],
  async run(args, io) {
    const root = rootOf(args, io);
    const id = args.positionals[0]!;
    requireAgent(root, id);
    io.out(args.values.json ? `${JSON.stringify({ agent: id, token: agentToken(root, id) })}\n` : `export ${AGENT_TOKEN_ENV}=${agentToken(root, id)}\n`);
    return 0;
  },
};
