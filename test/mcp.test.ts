import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { REPO, runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { agentToken } from '../src/hooks/agent-token.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { committedCursor } from '../src/queue/committed-cursor.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';

/** `hive mcp` driven by the official SDK's Client over stdio, as an agent CLI drives it. */

const HIVE_BIN = path.join(REPO, 'scripts', 'hive.mjs');

async function connect(root: string, agent: string, token: string | undefined = agentToken(root, agent)) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [HIVE_BIN, 'mcp'],
    env: { PATH: process.env.PATH ?? '', HIVE_ROOT: root, AGENT_ID: agent, ...(token ? { HIVE_AGENT_TOKEN: token } : {}) },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'hive-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ value: unknown; error: string | null }> {
  const r = (await client.callTool({ name, arguments: args })) as ToolResult;
  const text = r.content.map((c) => c.text).join('\n');
  return r.isError ? { value: null, error: text } : { value: JSON.parse(text), error: null };
}

describe('hive mcp', () => {
  it('lists its tools; send_message reaches an echo agent through the running hive and the reply waits in the inbox', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'cli', brain: { kind: 'external' } }] }));
    const { client } = await connect(hive.root, 'cli');
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['ack', 'ask_human', 'check_inbox', 'get_memory', 'list_agents', 'next_message', 'remember', 'send_message']);
      const sent = (await call(client, 'send_message', { to: 'echo', act: 'request', body: 'ping over mcp' })).value as { id: string };
      await waitFor(hive, () => readInbox(hive.root, 'cli', 0).entries.some((e) => e.message.in_reply_to === sent.id), 'the echo reply');
      const inbox = (await call(client, 'check_inbox')).value as { messages: { seq: number; message: { id: string; body: string; from: string; hops: number; conversation: string } }[] };
      expect(inbox.messages.map((m) => [m.message.from, m.message.body])).toEqual([['echo', 'ping over mcp']]);
      // A reply over MCP joins the conversation and counts a hop, as a brain's reply does.
      const echoed = inbox.messages[0]!.message;
      const back = (await call(client, 'send_message', { to: 'echo', act: 'inform', body: 'thanks', in_reply_to: echoed.id })).value as { id: string; conversation: string };
      expect(back.conversation).toBe(echoed.conversation);
      await waitFor(hive, () => readInbox(hive.root, 'echo', 0).entries.some((e) => e.message.id === back.id), 'the reply at echo');
      expect(readInbox(hive.root, 'echo', 0).entries.find((e) => e.message.id === back.id)!.message.hops).toBe(echoed.hops + 1);
      const agents = (await call(client, 'list_agents')).value as { id: string; brain: string }[];
      expect(agents.map((a) => a.id)).toEqual(expect.arrayContaining(['cli', 'echo', 'god']));
      // get_memory and remember: an entry written through the tool is found by the search.
      await call(client, 'remember', { title: 'Kumquats', body: 'The kumquat order ships on Friday.' });
      const found = (await call(client, 'get_memory', { query: 'kumquat' })).value as { matches: { agent: string }[] };
      expect(found.matches.map((m) => m.agent)).toContain('cli');
    } finally {
      await client.close();
    }
  });

  it('next_message + ack move the cursor exactly once; the server killed between the two loses and skips nothing (no supervisor running)', async () => {
    const root = path.join(tempDir(), 'hive');
    await ensureHive(root);
    await ensureAgent(root, { id: 'cli', brain: { kind: 'external' } });
    await ensureAgent(root, { id: 'bob', brain: { kind: 'external' } });
    // Two messages delivered by a hive that then stopped.
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'cli', brain: { kind: 'external' } }, { id: 'bob', brain: { kind: 'external' } }] }));
    for (const body of ['first', 'second']) writeOutbox(root, [createMessage({ from: 'bob', to: 'cli', act: 'inform', body })]);
    await waitFor(hive, () => readInbox(root, 'cli', 0).entries.length === 2, 'two deliveries');
    await hive.close();

    const one = await connect(root, 'cli');
    const first = (await call(one.client, 'next_message')).value as { seq: number; message: { body: string } };
    expect(first.message.body).toBe('first');
    process.kill(one.transport.pid!, 'SIGKILL'); // before its ack
    await one.client.close().catch(() => undefined);
    expect(committedCursor(root, 'cli')).toBe(0);

    const two = await connect(root, 'cli');
    try {
      const again = (await call(two.client, 'next_message')).value as { seq: number; message: { body: string } };
      expect(again).toMatchObject({ seq: first.seq, message: { body: 'first' } });
      expect((await call(two.client, 'ack', { seq: again.seq })).value).toEqual({ cursor: 1 });
      expect((await call(two.client, 'ack', { seq: again.seq })).value).toEqual({ cursor: 1 }); // twice: still once
      expect(((await call(two.client, 'next_message')).value as { message: { body: string } }).message.body).toBe('second');
      expect(committedCursor(root, 'cli')).toBe(1);
      // Past the inbox: refused, nothing moved.
      expect((await call(two.client, 'ack', { seq: 9 })).error).toMatch(/E_BAD_ARGS: Expected seq to be a delivered message's \(at most 2\), got 9/);
    } finally {
      await two.client.close();
    }
  });

  it('ask_human → hive answer → the answer arrives in the inbox', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', brain: { kind: 'external' } }] }));
    const { client } = await connect(hive.root, 'cli');
    try {
      const q = (await call(client, 'ask_human', { subject: 'Tone?', body: 'Formal or playful?' })).value as { id: string };
      await waitFor(hive, () => hive.questions().some((x) => x.id === q.id), 'the question at god');
      const answered = await runHive(['answer', q.id, '--body', 'Playful.', '--root', hive.root]);
      expect(answered.code, answered.stderr).toBe(0);
      await waitFor(hive, () => readInbox(hive.root, 'cli', 0).entries.some((e) => e.message.in_reply_to === q.id), 'the answer');
      const next = (await call(client, 'next_message')).value as { message: { from: string; body: string; in_reply_to: string } };
      expect(next.message).toMatchObject({ from: 'god', body: 'Playful.', in_reply_to: q.id });
    } finally {
      await client.close();
    }
  });

  it('bad arguments are an MCP error naming the field; another agent\'s inbox and a foreign token are refused', async () => {
    const root = path.join(tempDir(), 'hive');
    await ensureHive(root);
    await ensureAgent(root, { id: 'cli', brain: { kind: 'external' } });
    await ensureAgent(root, { id: 'other', brain: { kind: 'external' } });
    const { client } = await connect(root, 'cli');
    try {
      const missing = await client.callTool({ name: 'send_message', arguments: { to: 'other' } }).then(
        (r) => (r as ToolResult).content.map((c) => c.text).join(' '),
        (e: Error) => e.message,
      );
      expect(missing).toMatch(/MCP error -32602: Input validation error: Invalid arguments for tool send_message: .* at body/);
      const badAct = await client.callTool({ name: 'send_message', arguments: { to: 'other', body: 'x', act: 'shout' } }).then(
        (r) => (r as ToolResult).content.map((c) => c.text).join(' '),
        (e: Error) => e.message,
      );
      expect(badAct).toMatch(/Invalid arguments for tool send_message: .* at act/);
      expect((await call(client, 'send_message', { to: '../etc', body: 'x' })).error).toMatch(/E_BAD_MESSAGE: .*to/);
      expect((await call(client, 'check_inbox', { agent: 'other' })).error).toMatch(/scoped to agent "cli": the inbox of "other" is not yours to read/);
    } finally {
      await client.close();
    }
    const foreign = await connect(root, 'cli', agentToken(root, 'other')).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    expect(foreign).not.toBe('connected');
    const cli = await runHive(['mcp', '--root', root, '--agent', 'cli'], { env: { HIVE_AGENT_TOKEN: agentToken(root, 'other') } });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('HIVE_AGENT_TOKEN is not the token of agent "cli": refused');
  });
});
