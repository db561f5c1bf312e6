import { AGENT_TOKEN_ENV } from '../../hooks/agent-token.ts';
import { agentArg, badArgs, rootOf, str, type Command } from '../args.ts';

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve one agent\'s tools to an agent CLI over MCP (stdio): send_message, check_inbox, next_message, ack, ask_human, get_memory, remember, list_agents',
  usage: `hive mcp [--root DIR] [--agent ID]   (or HIVE_ROOT, AGENT_ID; the agent's token in ${AGENT_TOKEN_ENV})`,
  options: { root: { type: 'string' }, agent: { type: 'string' } },
  async run(args, io) {
    const agent = agentArg(this, str(args, 'agent') ?? io.env.AGENT_ID, '--agent');
    if (agent === undefined) throw badArgs(this, 'missing --agent ID (or AGENT_ID in the environment)');
    const root = rootOf(args, io);
    const { openScope } = await import('../../mcp/tools.ts');
    const scope = openScope(root, agent, io.env[AGENT_TOKEN_ENV]);
    const { serveMcp } = await import('../../mcp/server.ts');
    await serveMcp(scope);
    return 0;
  },
};
