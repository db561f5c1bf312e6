import fs from 'node:fs';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive } from './helpers/hive.ts';
import { REPO, runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { requestJsonLine } from '../src/net/json-line.ts';
import { resolveSocketPath } from '../src/net/socket-path.ts';
import { HOOKS_SOCKET } from '../src/hooks/server.ts';
import { deliverThroughRouter as deliver } from './helpers/deliver.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { committedCursor } from '../src/queue/committed-cursor.ts';
import { readJsonl } from '../src/session/journal.ts';
import { sessionPaths } from '../src/session/paths.ts';
import { currentSession } from '../src/session/session.ts';
import { HOOK_BUDGET_MS } from '../src/cli/commands/hook.ts';
import { agentToken } from '../src/hooks/agent-token.ts';
import { isAgentId } from '../src/protocol/agent-id.ts';

/** Sends raw bytes and returns the answer text once the server closes. */
function rawRequest(sock: string, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(sock);
    let out = '';
    c.on('connect', () => c.write(bytes));
    c.on('data', (d) => (out += String(d)));
    c.on('close', () => resolve(out));
    c.on('error', reject);
  });
}

async function hooksHive() {
  const hive = await startHive(
    fastConfig({
      agents: [{ id: 'ext', brain: { kind: 'external' } }, { id: 'echo', brain: { kind: 'echo' } }],
      hooks: { maxLineBytes: 4_096, deny: [{ tool: 'Bash', match: 'rm -rf', reason: 'no deleting trees' }] },
    }),
  );
  const sock = resolveSocketPath(hive.root, HOOKS_SOCKET);
  /** Sends an event as its agent would: with the agent's token. */
  const ask = (event: Record<string, unknown>, timeoutMs = 5_000) =>
    requestJsonLine(sock, { ...event, ...(isAgentId(event.agent_id) ? { agent_token: agentToken(hive.root, event.agent_id) } : {}) }, timeoutMs);
  return { hive, sock, ask };
}

describe('hooks socket', () => {
  it('listens with file mode 0600', async () => {
    const { sock } = await hooksHive();
    expect(fs.statSync(sock).mode & 0o777).toBe(0o600);
  });

  it('journals every event kind into the transcript and log.jsonl', async () => {
    const { hive, ask } = await hooksHive();
    for (const name of ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Notification', 'Stop']) {
      const answer = (await ask({ hook_event_name: name, agent_id: 'ext', session_id: 's1', tool_name: 'Read', tool_input: { path: 'x' } })) as { ok: boolean };
      expect(answer.ok, name).toBe(true);
    }
    const lines = readJsonl<{ kind: string; event: { hook_event_name: string } }>(sessionPaths(hive.root, 'ext', currentSession(hive.root, 'ext').key).transcript);
    expect(lines.filter((l) => l.kind === 'hook').map((l) => l.event.hook_event_name)).toEqual(['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Notification', 'Stop']);
    const log = fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8');
    for (const name of ['SessionStart', 'PreToolUse', 'Stop']) expect(log).toContain(`"type":"hook.${name}"`);
  });

  it('PreToolUse is denied by the operator policy', async () => {
    const { ask } = await hooksHive();
    const deny = await ask({ hook_event_name: 'PreToolUse', agent_id: 'ext', tool_name: 'Bash', tool_input: { command: 'rm -rf /' } });
    expect(deny).toMatchObject({ decision: 'deny', reason: 'no deleting trees', hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'no deleting trees' } });
    const allow = await ask({ hook_event_name: 'PreToolUse', agent_id: 'ext', tool_name: 'Bash', tool_input: { command: 'ls' } });
    expect(allow).toMatchObject({ decision: 'allow' });
  });

  it('Stop hands back unprocessed inbox messages and moves the cursor only when acknowledged', async () => {
    const { hive, ask } = await hooksHive();
    const msgs = [1, 2].map((i) => createMessage({ from: 'echo', to: 'ext', act: 'inform', body: `news ${i}` }));
    await deliver(hive.root, 'ext', msgs);
    const first = (await ask({ hook_event_name: 'Stop', agent_id: 'ext' })) as { decision: string; reason: string; ack: string; messages: unknown[] };
    expect(first.decision).toBe('block');
    expect(first.reason).toContain('news 1');
    expect(first.messages).toHaveLength(2);
    expect(committedCursor(hive.root, 'ext')).toBe(0);
    const again = (await ask({ hook_event_name: 'Stop', agent_id: 'ext' })) as { ack: string };
    expect(again.ack).toBe(first.ack);
    await ask({ hook_event_name: 'Ack', agent_id: 'ext', ack: first.ack });
    expect(committedCursor(hive.root, 'ext')).toBe(2);
    expect(await ask({ hook_event_name: 'Stop', agent_id: 'ext' })).toEqual({ ok: true });
  });

  it('an ack is refused for an agent run by its own actor and for a seq beyond the inbox; nothing moves', async () => {
    const { hive, ask } = await hooksHive();
    await hive.stop('echo'); // keep its inbox unread while we try to ack it from outside
    const msgs = [1, 2, 3].map((i) => createMessage({ from: 'ext', to: 'echo', act: 'inform', body: `note ${i}` }));
    await deliver(hive.root, 'echo', msgs);
    const forged = await ask({ hook_event_name: 'Notification', agent_id: 'echo', ack: 'echo:3' });
    expect(forged).toMatchObject({ ok: false, error: { code: 'E_HOOK', message: expect.stringContaining('run by its own actor') } });
    expect(committedCursor(hive.root, 'echo')).toBe(0);
    expect(listInbox(hive.root, 'echo').filter((e) => !e.done)).toHaveLength(3);

    await deliver(hive.root, 'ext', [createMessage({ from: 'echo', to: 'ext', act: 'inform', body: 'one' })]);
    const beyond = await ask({ hook_event_name: 'Ack', agent_id: 'ext', ack: 'ext:99' });
    expect(beyond).toMatchObject({ ok: false, error: { message: expect.stringContaining('inbox of "ext" ends at seq 1') } });
    const other = await ask({ hook_event_name: 'Ack', agent_id: 'ext', ack: 'echo:1' });
    expect(other).toMatchObject({ ok: false, error: { message: expect.stringContaining('belongs to agent "echo"') } });
    expect(committedCursor(hive.root, 'ext')).toBe(0);
    expect(fs.readFileSync(path.join(hive.root, 'log.jsonl'), 'utf8')).toContain('"type":"hook.rejected"');
  });

  it('an unknown agent, malformed JSON and an oversized line get an error answer; the server keeps serving', async () => {
    const { sock, ask } = await hooksHive();
    expect(await ask({ hook_event_name: 'Stop', agent_id: 'nobody' })).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_AGENT' } });
    expect(await ask({ hook_event_name: 'Stop', agent_id: '../x' })).toMatchObject({ ok: false, error: { code: 'E_HOOK' } });
    expect(JSON.parse(await rawRequest(sock, '{ not json\n'))).toMatchObject({ ok: false, error: { message: expect.stringContaining('Malformed JSON') } });
    expect(JSON.parse(await rawRequest(sock, `${'x'.repeat(10_000)}\n`))).toMatchObject({ ok: false, error: { message: expect.stringContaining('longer than 4096 bytes') } });
    expect(await ask({ hook_event_name: 'Notification', agent_id: 'ext' })).toEqual({ ok: true });
  });

  it('hive hook forwards stdin to HIVE_SOCK and prints the answer', async () => {
    const { hive, sock } = await hooksHive();
    const r = await runHive(['hook', '--event', 'PreToolUse'], {
      input: JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'rm -rf x' } }),
      env: { HIVE_SOCK: sock, AGENT_ID: 'ext', HIVE_AGENT_TOKEN: hive.agentToken('ext') },
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ decision: 'deny' });
  }, 90_000);

  it('hive hook never holds the agent up for more than 5 s, even when the socket never answers', async () => {
    const sock = path.join(tempDir(), 'silent.sock');
    const server = net.createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      // In this process: the bound is the shim's own budget, not a process start on a loaded machine.
      const io = memoryIO('{}', { HIVE_SOCK: sock, AGENT_ID: 'ext' });
      const t0 = Date.now();
      expect(await runCli(['hook', '--event', 'Stop'], io.io)).toBe(0);
      const ms = Date.now() - t0;
      expect(io.stdout.trim()).toBe('{}');
      expect(ms).toBeLessThan(HOOK_BUDGET_MS + 1_000);
      expect(io.stderr).toContain('No answer');
    } finally {
      server.close();
    }
  }, 90_000);

  it('hive hook keeps a character split across two stdin chunks whole', async () => {
    const sock = path.join(tempDir(), 'echo.sock');
    const chunks: Buffer[] = [];
    const server = net.createServer((c) => {
      c.on('data', (d: Buffer) => {
        chunks.push(d);
        if (d.at(-1) === 0x0a) c.end('{"ok":true}\n');
      });
    });
    const received = () => Buffer.concat(chunks).toString('utf8');
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      const event = Buffer.from(JSON.stringify({ tool_name: 'Write', tool_input: { text: 'é'.repeat(50_000) } }), 'utf8');
      const cut = event.indexOf(Buffer.from('é', 'utf8')) + 1; // inside the first é
      const io = memoryIO('', { AGENT_ID: 'ext' });
      io.io.stdin = Readable.from([event.subarray(0, cut), event.subarray(cut)]);
      expect(await runCli(['hook', '--event', 'PostToolUse', '--sock', sock], io.io)).toBe(0);
      expect(JSON.parse(received()).tool_input.text).toBe('é'.repeat(50_000));
    } finally {
      server.close();
    }
  });

  it('hive hook forwards an event whose writer keeps stdin open, and exits without waiting for it', async () => {
    const { hive, sock } = await hooksHive();
    const shim = spawn(process.execPath, [path.join(REPO, 'scripts', 'hive.mjs'), 'hook', '--event', 'PreToolUse'], {
      env: { ...process.env, HIVE_SOCK: sock, AGENT_ID: 'ext', HIVE_AGENT_TOKEN: hive.agentToken('ext') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    shim.stdout.on('data', (d) => (out += String(d)));
    shim.stdin.write(`${JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'rm -rf x' } })}\n`); // and never closed
    // It exits while its stdin is still open (held by it, it would hang until the test times out).
    const code = await new Promise<number | null>((resolve) => shim.once('exit', resolve));
    shim.stdin.destroy();
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ decision: 'deny' });
  }, 90_000);
});
