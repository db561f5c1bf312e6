import path from 'node:path';
import { execa } from 'execa';
import { HiveError } from '../errors.ts';
import { providerBinDir } from '../package-files.ts';
import { AGENT_TOKEN_ENV, agentToken } from '../hooks/agent-token.ts';
import type { BrainSpec } from '../config/schema.ts';
import { buildPrompt, type ToolDescription } from './prompt.ts';
import { parseBrainAnswer } from './reply.ts';
import type { Brain, BrainOutput, BrainTurn, JsonValue, TranscriptEvent } from './types.ts';
import { PRESET, commandOf } from './presets.ts';
import { installCliConfig } from './cli-install.ts';
import { describeInput } from './prompt.ts';
import { appendEvent } from '../log/event-log.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import { ProviderLedger, deathSignalPrefix, killGroup } from './provider-processes.ts';

type CommandSpec = Extract<BrainSpec, { kind: 'command' }>;

export interface CommandEnv {
  agentId: string;
  agentName: string;
  root: string;
  agentDir: string;
  /** The hooks socket (HIVE_SOCK) external agent CLIs report to. */
  hooksSock: string;
  /** Extra variables (OTEL_* when telemetry is configured). */
  extraEnv?: Record<string, string>;
  tools?: ToolDescription[];
  /** Write the preset CLI's hook and MCP entries into its working directory (the agent's own brain, not a summarizer's). */
  installCli?: boolean;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const STDERR_KEEP = 4_000;

/** `{{prompt}}`, `{{agent_id}}`, `{{agent_name}}` in args are filled per turn. */
function fillArgs(args: string[], vars: Record<string, string>, appendPrompt: boolean): string[] {
  const filled = args.map((a) => a.replace(/\{\{(\w+)\}\}/g, (m, k: string) => vars[k] ?? m));
  if (appendPrompt && !args.some((a) => a.includes('{{prompt}}'))) filled.push(vars.prompt!);
  return filled;
}

/**
 * The `command` provider: runs an external program for each turn with execa
 * (`claude -p --output-format json`, `codex exec`, `ollama run llama3`, any program).
 * The prompt goes on stdin (default) or into the args; stdout is read as text or JSON.
 * A timeout or a stop kills the process; a non-zero exit or unreadable output fails the
 * turn with an error that names the command and carries the end of its stderr.
 * @example createCommandBrain({ kind: 'command', command: 'claude', args: ['-p', '--output-format', 'json'], output: 'json' }, env)
 */
export function createCommandBrain(spec: CommandSpec, env: CommandEnv): Brain {
  const inflight = new Set<AbortController>();
  const ledger = new ProviderLedger(env.root, env.agentId);
  const prefix = deathSignalPrefix();
  const identity = () => {
    try {
      return readRegularFile(path.join(env.agentDir, 'identity.md'), 'utf8');
    } catch {
      return `# ${env.agentName}`;
    }
  };
  const childEnv = {
    ...spec.env,
    ...env.extraEnv,
    // `hive` on the PATH (scripts/bin/hive → the bin), so the get_memory usage the prompt
    // describes (`hive memory search ...`) runs from inside the provider process.
    PATH: [providerBinDir(), spec.env?.PATH ?? process.env.PATH ?? ''].join(path.delimiter),
    AGENT_ID: env.agentId,
    AGENT_NAME: env.agentName,
    HIVE_ROOT: env.root,
    AGENT_DIR: env.agentDir,
    HIVE_SOCK: env.hooksSock,
    [AGENT_TOKEN_ENV]: agentToken(env.root, env.agentId),
  };
  const program = commandOf(spec);
  const preset = spec.preset ? PRESET[spec.preset] : null;
  const name = preset ? `${preset.title} (\`${program}\`, preset ${preset.name})` : `Command \`${program}\``;
  if (preset && env.installCli) {
    // The CLI's hooks run `hive hook`, its MCP server `hive mcp`: written into its working
    // directory beside the user's own entries (src/brains/cli-install.ts).
    installCliConfig({ preset: preset.name, cwd: spec.cwd ?? env.agentDir, root: env.root, agentId: env.agentId, hive: path.join(providerBinDir(), 'hive') });
  }

  async function run(prompt: string, vars: Record<string, string>, presetArgs: string[] | null = null): Promise<{ stdout: string; stderr: string; ms: number; exitCode: number }> {
    const controller = new AbortController();
    inflight.add(controller);
    const viaArgs = presetArgs === null && spec.input === 'args';
    const started = performance.now();
    let pid: number | undefined;
    try {
      const args = presetArgs ? [...presetArgs, ...fillArgs(spec.args ?? [], { ...vars, prompt }, false)] : fillArgs(spec.args ?? [], { ...vars, prompt }, viaArgs);
      // Dies with the thread that starts it, in a process group of its own (see provider-processes.ts).
      const child = execa(prefix[0] ?? program, prefix.length > 0 ? [...prefix.slice(1), program, ...args] : args, {
        detached: true,
        input: viaArgs ? '' : prompt,
        cwd: spec.cwd ?? env.agentDir,
        env: childEnv,
        timeout: spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        cancelSignal: controller.signal,
        forceKillAfterDelay: 2_000,
        reject: false,
        stripFinalNewline: true,
        maxBuffer: 10 * 1024 * 1024,
      });
      pid = child.pid;
      if (pid !== undefined) ledger.started(pid);
      const result = await child;
      const ms = performance.now() - started;
      const stderr = String(result.stderr ?? '').slice(-STDERR_KEEP);
      if (result.timedOut || result.isCanceled) killGroup(pid ?? 0); // what it started goes with it
      if (prefix.length > 0 && result.exitCode === 127 && /^setpriv: failed to execute/m.test(stderr)) {
        throw new HiveError('E_UNAVAILABLE', `Cannot run ${name}: ${stderr.trim().split('\n').at(-1)}`, { details: { stderr } });
      }
      if (result.timedOut) throw new HiveError('E_TIMEOUT', `${name} did not finish within ${spec.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms and was killed`, { details: { stderr, pid: child.pid ?? null } });
      if (result.isCanceled) throw new HiveError('E_STOPPED', `${name} was stopped`, { details: { stderr } });
      if (result.failed && result.exitCode === undefined) {
        // It never ran (ENOENT, EACCES...): the configuration or the machine, not the message.
        throw new HiveError('E_UNAVAILABLE', `Cannot run ${name}: ${result.shortMessage ?? result.message}`, { details: { stderr, code: (result as { code?: string }).code ?? null } });
      }
      if (result.exitCode !== 0) {
        throw new HiveError('E_BRAIN', `${name} exited with code ${result.exitCode}${stderr ? `: ${stderr.trim().slice(-500)}` : ''}`, {
          details: { stderr, exitCode: result.exitCode, stdout: String(result.stdout ?? '').slice(-STDERR_KEEP) },
        });
      }
      return { stdout: String(result.stdout ?? ''), stderr, ms, exitCode: 0 };
    } finally {
      inflight.delete(controller);
      if (pid !== undefined) ledger.ended(pid);
    }
  }

  /** What one run of the program adds to the transcript: the prompt's size, the process, its stderr and output. */
  function processTrace(prompt: TranscriptEvent, r: Awaited<ReturnType<typeof run>>): TranscriptEvent[] {
    return [
      prompt,
      { kind: 'process', command: program, exitCode: r.exitCode, ms: Math.round(r.ms) },
      ...(r.stderr ? [{ kind: 'stderr', text: r.stderr }] : []),
      { kind: 'output', text: r.stdout.slice(0, 20_000) },
    ];
  }

  /** One prompt, its answer text (a preset's answer format; else the `result`/`reply`/`text` of a JSON answer, else stdout). */
  async function completeText(prompt: string): Promise<string> {
    const vars = { agent_id: env.agentId, agent_name: env.agentName, message_id: '' };
    if (preset) {
      const r = await run(prompt, vars, preset.args(null));
      const answer = preset.parse(r.stdout);
      if (answer.isError) throw new HiveError('E_BRAIN', `${name} reported an error: ${answer.text.slice(0, 500)}`);
      return answer.text;
    }
    const r = await run(prompt, vars);
    const answer = r.stdout.trim();
    try {
      const o = JSON.parse(answer) as Record<string, unknown>;
      const t = [o.result, o.reply, o.text].find((v) => typeof v === 'string');
      if (typeof t === 'string') return t;
    } catch {
      // plain text
    }
    return answer;
  }

  /**
   * A turn of a preset CLI: its own session (the id it gave, kept per conversation in the
   * brain state, so it is committed with the turn and follows the conversation through
   * clear, archive and reopen) is resumed with only the new message; a CLI that says the
   * session is gone gets the whole prompt again (the conversation's restore: history, tail
   * brief or amnesia) in a new session, and the log says so.
   */
  async function presetTurn(turn: BrainTurn): Promise<BrainOutput> {
    const p = preset!;
    const key = turn.conversation?.key ?? 'default';
    const state = (turn.state && typeof turn.state === 'object' && !Array.isArray(turn.state) ? turn.state : {}) as Record<string, JsonValue>;
    const sessions = { ...((state.cliSessions ?? {}) as Record<string, string>) };
    const vars = { agent_id: env.agentId, agent_name: env.agentName, message_id: turn.input.kind === 'message' ? turn.input.message.id : '' };
    const attempt = async (resume: string | null) => {
      const prompt = resume ? `# New message\n${describeInput(turn.input)}\n` : buildPrompt(turn, identity(), env.tools ?? []).text;
      let r: Awaited<ReturnType<typeof run>>;
      try {
        r = await run(prompt, vars, p.args(resume));
      } catch (err) {
        const details = (err as { details?: { stderr?: string; stdout?: string } }).details;
        const said = `${details?.stderr ?? ''}\n${details?.stdout ?? ''}\n${(err as Error).message}`;
        if (resume && p.sessionLost(said)) return { lost: true as const };
        throw err;
      }
      const answer = p.parse(r.stdout);
      if (answer.isError && resume && p.sessionLost(answer.text)) return { lost: true as const };
      if (answer.isError) throw new HiveError('E_BRAIN', `${name} reported an error: ${answer.text.slice(0, 500)}`, { details: { stderr: r.stderr } });
      return { lost: false as const, answer, r, prompt, resumed: resume };
    };
    let done = await attempt(sessions[key] ?? null);
    let lost: string | null = null;
    if (done.lost) {
      lost = sessions[key]!;
      appendEvent(env.root, { type: 'brain.session-lost', agent: env.agentId, preset: p.name, session: lost, conversation: key });
      delete sessions[key];
      done = await attempt(null);
      if (done.lost) throw new HiveError('E_BRAIN', `${name} lost a session it was not asked to resume`);
    }
    const out = parseBrainAnswer(done.answer.text, turn.input, 'text', name);
    const id = done.answer.sessionId ?? done.resumed;
    if (id) sessions[key] = id;
    const own = out.state && typeof out.state === 'object' && !Array.isArray(out.state) ? out.state : {};
    out.state = { ...state, ...own, cliSessions: sessions };
    out.trace = [...(lost ? [{ kind: 'session-lost', session: lost }] : []), ...processTrace({ kind: 'prompt', chars: done.prompt.length, resumed: done.resumed }, done.r)];
    return out;
  }

  return {
    kind: 'command',
    conversational: true,
    async handle(turn: BrainTurn): Promise<BrainOutput> {
      if (preset) return presetTurn(turn);
      const prompt = buildPrompt(turn, identity(), env.tools ?? []);
      const vars = { agent_id: env.agentId, agent_name: env.agentName, message_id: turn.input.kind === 'message' ? turn.input.message.id : '' };
      const r = await run(prompt.text, vars);
      const out = parseBrainAnswer(r.stdout, turn.input, spec.output ?? 'text', name);
      out.trace = processTrace({ kind: 'prompt', chars: prompt.text.length }, r);
      return out;
    },
    summarize: (text: string) => completeText(`Summarize the following conversation in a short, self-contained recap of what was decided and learned:\n\n${text}`).then((t) => t.trim()),
    complete: completeText,
    async close() {
      for (const c of inflight) c.abort();
    },
  };
}
