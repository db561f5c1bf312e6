import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { currentSession } from '../src/session/session.ts';
import { sessionPaths } from '../src/session/paths.ts';
import { readJsonl } from '../src/session/journal.ts';
import { parseBrainAnswer } from '../src/brains/reply.ts';
import { createMessage } from '../src/protocol/message.ts';

const cli = (name: string, args: string[] = [], extra: Record<string, unknown> = {}) => ({
  kind: 'command' as const,
  command: process.execPath,
  args: [path.join(FIXTURES, 'cli', name), ...args],
  ...extra,
});
const client = { id: 'client', brain: { kind: 'external' as const } };
const inbox = (root: string, id: string) => readInbox(root, id, 0).entries.map((e) => e.message);
const transcript = (root: string, id: string) => readJsonl<{ kind: string; [k: string]: unknown }>(sessionPaths(root, id, currentSession(root, id).key).transcript);

describe('command provider', () => {
  it('answers from stdout, keeps the conversation and gives the child its environment', async () => {
    const envFile = path.join(tempDir(), 'env.json');
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', name: 'Cli Agent', brain: cli('answer.mjs', ['--env', envFile]) }, client] }));
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'first' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'first reply');
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'second' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 2, 'second reply');
    const replies = inbox(hive.root, 'client');
    expect(replies[0]!.body).toBe('heard "first" (history 0)');
    expect(replies[1]!.body).toBe('heard "second" (history 2)');
    const env = JSON.parse(fs.readFileSync(envFile, 'utf8'));
    expect(env).toMatchObject({ AGENT_ID: 'cli', AGENT_NAME: 'Cli Agent', HIVE_ROOT: hive.root, AGENT_DIR: path.join(hive.root, 'agents', 'cli') });
    expect(env.HIVE_SOCK).toMatch(/hooks\.sock$/);
    expect(env.HIVE_AGENT_TOKEN).toBe(hive.agentToken('cli'));
    const kinds = transcript(hive.root, 'cli').map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['restore', 'input', 'prompt', 'process', 'output']));
  });

  it('with telemetry on, the provider process gets the OTEL_* variables naming the agent', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const envFile = path.join(tempDir(), 'env.json');
      const hive = await startHive(
        fastConfig({ agents: [{ id: 'cli', name: 'Cli Agent', brain: cli('answer.mjs', ['--env', envFile]) }, client], telemetry: { otlpEndpoint: endpoint, serviceName: 'hive-test' } }),
      );
      await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'traced' });
      await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the reply');
      const env = JSON.parse(fs.readFileSync(envFile, 'utf8'));
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe(endpoint);
      expect(env.OTEL_RESOURCE_ATTRIBUTES).toContain('agent.id=cli');
      await hive.close();
    } finally {
      server.close();
    }
  });

  it('reads JSON output with a reply and extra messages; the prompt can go into args', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', brain: cli('answer.mjs', ['--json', '--args'], { input: 'args', output: 'json' }) }, client] }));
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'hello' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1 && inbox(hive.root, 'god').length === 1, 'reply and extra message');
    expect(inbox(hive.root, 'god')[0]).toMatchObject({ from: 'cli', subject: 'fyi', body: 'copy: hello' });
  });

  it('a command that hangs past its timeout is killed; the turn fails and the message ends as poison, not lost', async () => {
    const hive = await startHive(
      fastConfig({ agents: [{ id: 'slow', brain: cli('hang.mjs', [], { timeoutMs: 300 }) }, client], supervisor: { brainRetries: 0, poisonAfter: 1, restart: { maxRestarts: 10 } } }),
    );
    const req = await hive.send({ from: 'client', to: 'slow', act: 'request', body: 'are you there?' });
    await nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_POISON', 30_000);
    // The pid comes from the transcript, not from the child: on a loaded machine the child can be
    // killed at 300 ms before it has even written its pid file.
    const timeout = transcript(hive.root, 'slow').find((e) => e.kind === 'error' && e.code === 'E_TIMEOUT');
    const pid = (timeout?.details as { pid?: number } | undefined)?.pid;
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid!, 0)).toThrow();
    const pidFile = path.join(hive.root, 'agents', 'slow', 'hang.pid');
    if (fs.existsSync(pidFile)) expect(Number(fs.readFileSync(pidFile, 'utf8'))).toBe(pid);
    expect(listDeadLetters(hive.root).some((d) => d.name.includes(req.id))).toBe(true);
  });

  it('a non-zero exit fails the turn with the exit code and stderr, is retried, then dead-lettered', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'bad', brain: cli('fail.mjs') }, client], supervisor: { brainRetries: 1, poisonAfter: 1, restart: { maxRestarts: 10 } } }));
    await hive.send({ from: 'client', to: 'bad', act: 'request', body: 'x' });
    await nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_POISON', 30_000);
    const errors = transcript(hive.root, 'bad').filter((e) => e.kind === 'error');
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(String(errors[0]!.message)).toMatch(/exited with code 3: boom: the model is on fire/);
    const log = fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8');
    expect(log).toContain('"type":"brain.failed"');
  });

  it('garbage where JSON was expected is an unreadable-output error', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'g', brain: cli('garbage.mjs', [], { output: 'json' }) }, client], supervisor: { brainRetries: 0, poisonAfter: 1, restart: { maxRestarts: 10 } } }));
    await hive.send({ from: 'client', to: 'g', act: 'request', body: 'x' });
    await nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_POISON', 30_000);
    expect(transcript(hive.root, 'g').find((e) => e.kind === 'error')?.message).toMatch(/unreadable output \(expected JSON\)/);
  });

  it('a transient failure is retried in place and the message is handled once', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'f', brain: cli('flaky.mjs') }, client] }));
    await hive.send({ from: 'client', to: 'f', act: 'request', body: 'x' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'reply after retry');
    expect(inbox(hive.root, 'client')[0]!.body).toBe('recovered');
    expect(hive.status().find((s) => s.id === 'f')?.restarts).toBe(0);
  });
});

describe('openai provider', () => {
  it('posts the history as chat messages with the API key from the named variable', async () => {
    const requests: { auth: string | undefined; body: { model: string; messages: { role: string; content: string }[] } }[] = [];
    const server = http.createServer((req, res) => {
      let data = '';
      req.on('data', (d) => (data += d));
      req.on('end', () => {
        const body = JSON.parse(data);
        requests.push({ auth: req.headers.authorization, body });
        const last = body.messages.at(-1).content.split('\n').slice(1).join(' ');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `llm says ${last}` } }], usage: { total_tokens: 3 } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    process.env.HIVE_TEST_KEY = 'sk-test-123';
    try {
      const hive = await startHive(
        fastConfig({ agents: [{ id: 'llm', brain: { kind: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, model: 'tiny', apiKeyEnv: 'HIVE_TEST_KEY' } }, client] }),
      );
      await hive.send({ from: 'client', to: 'llm', act: 'request', body: 'one' });
      await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'first');
      await hive.send({ from: 'client', to: 'llm', act: 'request', body: 'two' });
      await waitFor(hive, () => inbox(hive.root, 'client').length === 2, 'second');
      expect(inbox(hive.root, 'client').map((m) => m.body)).toEqual(['llm says one', 'llm says two']);
      expect(requests[0]!.auth).toBe('Bearer sk-test-123');
      expect(requests[0]!.body.model).toBe('tiny');
      expect(requests[1]!.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
      expect(requests[1]!.body.messages[2]!.content).toBe('llm says one');
    } finally {
      delete process.env.HIVE_TEST_KEY;
      server.close();
    }
  });

  it('an HTTP error fails the turn with the status', async () => {
    const server = http.createServer((_req, res) => {
      res.statusCode = 503;
      res.end('overloaded');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const hive = await startHive(
        fastConfig({ agents: [{ id: 'llm', brain: { kind: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, model: 'm' } }, client], supervisor: { brainRetries: 0, poisonAfter: 1, restart: { maxRestarts: 10 } } }),
      );
      await hive.send({ from: 'client', to: 'llm', act: 'request', body: 'x' });
      await nextEvent(hive, 'dead-lettered', (e) => e.code === 'E_POISON', 30_000);
      expect(transcript(hive.root, 'llm').find((e) => e.kind === 'error')?.message).toContain('answered HTTP 503: overloaded');
    } finally {
      server.close();
    }
  });
});

describe('get_memory for prompt-driven brains', () => {
  it('an openai brain calls get_memory as a function and answers with what memory holds', async () => {
    const bodies: { messages: { role: string; content: string | null; tool_calls?: unknown }[]; tools?: { function: { name: string } }[] }[] = [];
    const server = http.createServer((req, res) => {
      let data = '';
      req.on('data', (d) => (data += d));
      req.on('end', () => {
        const body = JSON.parse(data);
        bodies.push(body);
        res.setHeader('content-type', 'application/json');
        const last = body.messages.at(-1);
        if (last.role === 'tool') {
          const found = JSON.parse(last.content) as { matches: { excerpt: string }[] };
          res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `memory says: ${found.matches[0]?.excerpt ?? 'nothing'}` } }] }));
        } else {
          res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_memory', arguments: '{"query":"deploy day"}' } }] } }] }));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const hive = await startHive(fastConfig({ agents: [{ id: 'llm', brain: { kind: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, model: 'm' } }, client] }));
      await hive.remember('client', 'Release rules\nWe deploy on Tuesdays, never on Fridays.');
      await hive.send({ from: 'client', to: 'llm', act: 'query', body: 'When do we deploy?' });
      await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'answer after the tool call');
      expect(inbox(hive.root, 'client')[0]!.body).toMatch(/^memory says: .*Tuesdays/);
      expect(bodies[0]!.tools?.map((t) => t.function.name)).toEqual(['get_memory']);
      expect(transcript(hive.root, 'llm').some((e) => e.kind === 'tool' && e.name === 'get_memory')).toBe(true);
    } finally {
      server.close();
    }
  });

  it('a command brain calls get_memory as its prompt describes: `hive memory search` runs from inside the provider process', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'rec', brain: cli('recall.mjs') }, client] }));
    await hive.remember('rec', { title: 'Door colour', body: 'The front door of the office is painted blue.' });
    await hive.send({ from: 'client', to: 'rec', act: 'query', body: 'recall: front door painted' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 1, 'the reply');
    expect(inbox(hive.root, 'client')[0]!.body).toMatch(/^found: .*Door colour$/);
  });

  it('a command brain is told how to call get_memory', async () => {
    const { buildPrompt } = await import('../src/brains/prompt.ts');
    const { GET_MEMORY_TOOL } = await import('../src/memory/tool.ts');
    const input = { kind: 'message' as const, seq: 1, message: createMessage({ from: 'a', to: 'b', act: 'query', body: 'q' }) };
    const p = buildPrompt({ input, agent: { id: 'b', name: 'B', role: 'r' }, state: null, now: 0, root: '/r', agentDir: '/r/agents/b' }, '# B', [{ ...GET_MEMORY_TOOL, usage: 'hive memory search "QUERY" --json' }]);
    expect(p.text).toContain('# Tools\n- get_memory:');
    expect(p.text).toContain('call it: hive memory search "QUERY" --json');
  });
});

describe('answer parsing', () => {
  const input = { kind: 'message' as const, seq: 1, message: createMessage({ from: 'a', to: 'b', act: 'request', body: 'q' }) };
  it('plain text becomes a reply to the sender', () => {
    const out = parseBrainAnswer('sure\n', input, 'text', 'x');
    expect(out.messages).toEqual([{ to: 'a', act: 'inform', in_reply_to: input.message.id, body: 'sure' }]);
  });
  it("understands Claude's --output-format json envelope", () => {
    expect(parseBrainAnswer(JSON.stringify({ type: 'result', result: 'done', is_error: false }), input, 'json', 'x').reply).toBe('done');
    expect(() => parseBrainAnswer(JSON.stringify({ type: 'result', result: 'quota', is_error: true }), input, 'json', 'x')).toThrow(/reported an error: quota/);
  });
  it('rejects malformed messages by index and field', () => {
    expect(() => parseBrainAnswer(JSON.stringify({ messages: [{ to: 'b', act: 'shout', body: 'x' }] }), input, 'json', 'cmd')).toThrow('cmd: messages[0].act must be one of');
  });
});

