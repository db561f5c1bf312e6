import path from 'node:path';
import { execa } from 'execa';
import { HiveError } from '../errors.ts';
import { providerBinDir } from '../package-files.ts';
import { AGENT_TOKEN_ENV, agentToken } from '../hooks/agent-token.ts';
import type { BrainSpec } from '../config/schema.ts';
import { buildPrompt, type ToolDescription } from './prompt.ts';
import { parseBrainAnswer } from './reply.ts';
import type { Brain, BrainOutput, BrainTurn } from './types.ts';
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
  const name = `Command \`${spec.command}\``;

  async function run(prompt: string, vars: Record<string, string>): Promise<{ stdout: string; stderr: string; ms: number; exitCode: number }> {
    const controller = new AbortController();
    inflight.add(controller);
    const viaArgs = spec.input === 'args';
    const started = performance.now();
    let pid: number | undefined;
    try {
      const args = fillArgs(spec.args ?? [], { ...vars, prompt }, viaArgs);
      // Dies with the thread that starts it, in a process group of its own (see provider-processes.ts).
      const child = execa(prefix[0] ?? spec.command, prefix.length > 0 ? [...prefix.slice(1), spec.command, ...args] : args, {
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
        throw new HiveError('E_BRAIN', `${name} exited with code ${result.exitCode}${stderr ? `: ${stderr.trim().slice(-500)}` : ''}`, { details: { stderr, exitCode: result.exitCode } });
      }
      return { stdout: String(result.stdout ?? ''), stderr, ms, exitCode: 0 };
    } finally {
      inflight.delete(controller);
      if (pid !== undefined) ledger.ended(pid);
    }
  }

  /** One prompt, its answer text (the `result`/`reply`/`text` of a JSON answer, else stdout). */
  async function completeText(prompt: string): Promise<string> {
    const r = await run(prompt, { agent_id: env.agentId, agent_name: env.agentName, message_id: '' });
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

  return {
    kind: 'command',
    conversational: true,
    async handle(turn: BrainTurn): Promise<BrainOutput> {
      const prompt = buildPrompt(turn, identity(), env.tools ?? []);
      const vars = { agent_id: env.agentId, agent_name: env.agentName, message_id: turn.input.kind === 'message' ? turn.input.message.id : '' };
      const r = await run(prompt.text, vars);
      const out = parseBrainAnswer(r.stdout, turn.input, spec.output ?? 'text', name);
      out.trace = [
        { kind: 'prompt', chars: prompt.text.length },
        { kind: 'process', command: spec.command, exitCode: r.exitCode, ms: Math.round(r.ms) },
        ...(r.stderr ? [{ kind: 'stderr', text: r.stderr }] : []),
        { kind: 'output', text: r.stdout.slice(0, 20_000) },
      ];
      return out;
    },
    summarize: (text: string) => completeText(`Summarize the following conversation in a short, self-contained recap of what was decided and learned:\n\n${text}`).then((t) => t.trim()),
    complete: completeText,
    async close() {
      for (const c of inflight) c.abort();
    },
  };
}
