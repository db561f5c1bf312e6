import { StringDecoder } from 'node:string_decoder';
import { requestJsonLine } from '../../net/json-line.ts';
import { resolveSocketPath } from '../../net/socket-path.ts';
import { HOOKS_SOCKET } from '../../hooks/socket-name.ts';
import { AGENT_TOKEN_ENV } from '../../hooks/agent-token.ts';
import { str, type Command } from '../args.ts';
import path from 'node:path';

/** Connect to answer; with process start (~0.5 s) the whole call stays under 5 s. */
export const HOOK_BUDGET_MS = 4_000;

/** How long to wait for the event on stdin. */
const STDIN_MS = 1_000;

/**
 * Reads the event from stdin: done at end of input, or as soon as what arrived parses as
 * JSON (a CLI may keep its end of the pipe open), or at the deadline with what is there.
 * Then stdin is let go, so an open pipe cannot keep this process alive.
 */
function readEvent(stdin: NodeJS.ReadableStream, deadlineMs: number): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    // Characters split across chunks are joined before decoding (a StringDecoder keeps the tail).
    const decoder = new StringDecoder('utf8');
    let timer: NodeJS.Timeout | null = null;
    const finish = () => {
      if (timer) clearTimeout(timer);
      stdin.removeListener('data', onData);
      stdin.removeListener('end', finish);
      stdin.removeListener('error', finish);
      (stdin as { destroy?: () => void }).destroy?.();
      resolve(text);
    };
    const onData = (chunk: Buffer | string) => {
      text += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      if (!text.trimEnd().endsWith('}')) return; // an object cannot be complete yet
      try {
        JSON.parse(text);
        finish();
      } catch {
        // not complete yet
      }
    };
    timer = setTimeout(finish, deadlineMs);
    stdin.on('data', onData);
    stdin.once('end', finish);
    stdin.once('error', finish);
  });
}

/** Gemini CLI's hook events under the names the hooks socket knows. */
const GEMINI_EVENTS: Record<string, string> = { BeforeTool: 'PreToolUse', AfterTool: 'PostToolUse', AfterAgent: 'Stop' };

export const hookCommand: Command = {
  name: 'hook',
  summary: 'the shim an agent CLI runs as its hook: forwards the event on stdin to HIVE_SOCK, prints the answer (never blocks > 5 s)',
  usage: 'hive hook [--event NAME] [--agent ID] [--token T] [--sock PATH | --root DIR]   (AGENT_ID, HIVE_AGENT_TOKEN, HIVE_SOCK from the environment)',
  options: { event: { type: 'string' }, agent: { type: 'string' }, token: { type: 'string' }, sock: { type: 'string' }, root: { type: 'string' } },
  async run(args, io) {
    const started = Date.now();
    let event: Record<string, unknown> = {};
    const text = (await readEvent(io.stdin, STDIN_MS)).trim();
    if (text) {
      try {
        const parsed = JSON.parse(text);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) event = parsed;
      } catch {
        io.err('hive hook: stdin is not a JSON object; forwarding the flags only\n');
      }
    }
    const name = str(args, 'event');
    if (name) event.hook_event_name = name;
    // Gemini CLI names its hook events its own way; the socket speaks Claude Code's names.
    const alias = typeof event.hook_event_name === 'string' ? GEMINI_EVENTS[event.hook_event_name] : undefined;
    if (alias) event.hook_event_name = alias;
    // The flag Hive installs names the agent; a CLI's own agent_id (a subagent's) must not override it.
    const flagAgent = str(args, 'agent');
    if (flagAgent) event.agent_id = flagAgent;
    else event.agent_id ??= io.env.AGENT_ID;
    const token = str(args, 'token') ?? io.env[AGENT_TOKEN_ENV];
    if (token !== undefined) event.agent_token ??= token;
    const sock = str(args, 'sock') ?? io.env.HIVE_SOCK ?? resolveSocketPath(path.resolve(io.cwd, str(args, 'root') ?? io.env.HIVE_ROOT ?? '.hive'), HOOKS_SOCKET);
    try {
      const answer = await requestJsonLine(sock, event, Math.max(100, HOOK_BUDGET_MS - (Date.now() - started)));
      io.out(`${JSON.stringify(answer)}\n`);
    } catch (err) {
      // Never hold the agent up or fail it: a neutral answer and a note on stderr.
      io.err(`hive hook: ${(err as Error).message}\n`);
      io.out('{}\n');
    }
    return 0;
  },
};
