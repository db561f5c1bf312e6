import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { errorMessage, isHiveError } from '../errors.ts';
import { ACTS } from '../protocol/message.ts';
import { packageVersion } from '../package-files.ts';
import { ack, askHuman, checkInbox, getMemory, listAgents, nextMessage, rememberEntry, sendMessage, type McpScope } from './tools.ts';

/**
 * `hive mcp`: the MCP server an agent CLI starts for one agent (stdio). Tools are the
 * functions of ./tools.ts; their arguments are checked against the schemas below by the
 * SDK (a bad argument is an error naming the field), and a Hive error is a tool error with
 * its code and message, never a crash of the server.
 */

type Result = { content: { type: 'text'; text: string }[]; isError?: boolean };

async function answer(run: () => unknown): Promise<Result> {
  try {
    const value = await run();
    return { content: [{ type: 'text', text: JSON.stringify(value ?? null) }] };
  } catch (err) {
    const code = isHiveError(err) ? `${(err as { code: string }).code}: ` : '';
    return { content: [{ type: 'text', text: `${code}${errorMessage(err)}` }], isError: true };
  }
}

const agentId = z.string().describe('an agent id (lowercase letters, digits, . _ -)');

/** The server with every tool registered, for one agent. */
export function createMcpServer(scope: McpScope): McpServer {
  const server = new McpServer({ name: 'hive', version: packageVersion() });
  server.registerTool(
    'send_message',
    {
      description: `Send a message from ${scope.agent} to another agent (or "god", the people). Written durably to your outbox; the hive routes it.`,
      inputSchema: {
        to: agentId,
        act: z.enum(ACTS).optional().describe('what the message does (default inform)'),
        body: z.string().min(1),
        subject: z.string().optional(),
        needs_human: z.boolean().optional().describe('a person must answer (it goes to the people in the loop)'),
        in_reply_to: z.string().optional().describe('the id of the message this answers'),
        conversation: z.string().optional(),
      },
    },
    (input) => answer(() => sendMessage(scope, input)),
  );
  server.registerTool(
    'check_inbox',
    {
      description: `The unprocessed messages in ${scope.agent}'s inbox, in order (nothing is marked handled; use ack).`,
      inputSchema: { limit: z.number().int().min(1).max(50).optional(), agent: agentId.optional().describe(`only ${scope.agent}: this server is scoped to it`) },
    },
    (input) => answer(() => checkInbox(scope, input)),
  );
  server.registerTool(
    'next_message',
    { description: 'The next unprocessed message (or null) with its seq; call ack with that seq once it is handled.', inputSchema: {} },
    () => answer(() => nextMessage(scope)),
  );
  server.registerTool(
    'ack',
    { description: 'Mark the inbox handled up to and including seq (the cursor moves only here). For an agent whose turns Hive runs, its turns move the cursor and ack is refused.', inputSchema: { seq: z.number().int().positive() } },
    (input) => answer(() => ack(scope, input)),
  );
  server.registerTool(
    'ask_human',
    {
      description: 'Ask the people in the loop a question; the answer arrives later as a message from god.',
      inputSchema: { body: z.string().min(1), subject: z.string().optional(), conversation: z.string().optional() },
    },
    (input) => answer(() => askHuman(scope, input)),
  );
  server.registerTool(
    'get_memory',
    {
      description: "Search the hive's memories (every agent's memory.md).",
      inputSchema: { query: z.string().min(1), agent: agentId.optional(), limit: z.number().int().min(1).max(20).optional() },
    },
    (input) => answer(() => getMemory(scope, input)),
  );
  server.registerTool(
    'remember',
    { description: `Add a durable entry to ${scope.agent}'s memory.md.`, inputSchema: { body: z.string().min(1), title: z.string().optional() } },
    (input) => answer(() => rememberEntry(scope, input)),
  );
  server.registerTool(
    'list_agents',
    { description: 'Every agent of the hive: id, name, role, brain and status.', inputSchema: {} },
    () => answer(() => listAgents(scope)),
  );
  return server;
}

/** Serves until the client closes stdin (or the given transport closes). */
export async function serveMcp(scope: McpScope, transport: Transport = new StdioServerTransport()): Promise<void> {
  const server = createMcpServer(scope);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(transport);
  await closed;
  scope.inbox.close();
}
