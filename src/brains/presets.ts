/**
 * What Hive knows of each agent CLI it can run as a `command` brain with `preset`: how to
 * run one turn non-interactively, how to read its answer and its own session id, how to
 * resume that session, and how it says a session is gone. docs/architecture.md, "Agent CLIs".
 * The formats are the CLIs' documented ones; test/fixtures/cli/fake-*.mjs follow them.
 */

export const PRESETS = ['claude', 'codex', 'gemini'] as const;
export type PresetName = (typeof PRESETS)[number];

/** One turn's answer as the CLI gave it. */
export interface PresetAnswer {
  text: string;
  /** The CLI's own session (thread) id, when it said one. */
  sessionId: string | null;
  /** The CLI reported the turn failed (its answer is the error). */
  isError: boolean;
}

export interface Preset {
  name: PresetName;
  /** The program on PATH (the spec's `command` overrides it). */
  program: string;
  /** What it is, for errors: "Claude Code". */
  title: string;
  /** Arguments of a turn: a new session, or the one with this id resumed. The prompt goes on stdin. */
  args(resume: string | null): string[];
  parse(stdout: string): PresetAnswer;
  /** The CLI says the session it was asked to resume does not exist (any more). */
  sessionLost(output: string): boolean;
}

function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

const claude: Preset = {
  name: 'claude',
  program: 'claude',
  title: 'Claude Code',
  // `-p` prints one answer and exits; the JSON result carries session_id and is_error.
  args: (resume) => ['-p', '--output-format', 'json', ...(resume ? ['--resume', resume] : [])],
  parse(stdout) {
    const r = jsonLines(stdout).findLast((o) => o.type === 'result') ?? (JSON.parse(stdout) as Record<string, unknown>);
    return { text: String(r.result ?? ''), sessionId: str(r.session_id), isError: r.is_error === true };
  },
  sessionLost: (output) => /no conversation found with session id/i.test(output),
};

const codex: Preset = {
  name: 'codex',
  program: 'codex',
  title: 'Codex CLI',
  // `exec --json` prints JSONL events; `-` reads the prompt from stdin; `exec resume <id>` continues a thread.
  // --skip-git-repo-check: an agent's working directory need not be a git repository.
  args: (resume) => ['exec', '--json', '--skip-git-repo-check', ...(resume ? ['resume', resume] : []), '-'],
  parse(stdout) {
    const events = jsonLines(stdout);
    const thread = events.find((e) => e.type === 'thread.started' || e.type === 'thread.resumed');
    const messages = events.filter((e) => e.type === 'item.completed' && (e.item as { type?: string } | undefined)?.type === 'agent_message');
    // A non-fatal `error` event beside a completed message is not a failed turn.
    const failed = events.find((e) => e.type === 'turn.failed') ?? (messages.length === 0 ? events.find((e) => e.type === 'error') : undefined);
    const error = failed ? String((failed.error as { message?: string } | undefined)?.message ?? failed.message ?? 'turn failed') : null;
    return {
      text: error ?? messages.map((m) => String((m.item as { text?: string }).text ?? '')).join('\n'),
      sessionId: str(thread?.thread_id),
      isError: error !== null,
    };
  },
  sessionLost: (output) => /no (rollout|session|thread) found|session .* not found|thread .* not found/i.test(output),
};

const gemini: Preset = {
  name: 'gemini',
  program: 'gemini',
  title: 'Gemini CLI',
  // Headless with the prompt on stdin; stream-json says the session id in its `init` event.
  args: (resume) => ['--output-format', 'stream-json', ...(resume ? ['--resume', resume] : [])],
  parse(stdout) {
    const events = jsonLines(stdout);
    const init = events.find((e) => e.type === 'init');
    const result = events.findLast((e) => e.type === 'result');
    const said = events.filter((e) => e.type === 'message' && e.role === 'assistant').map((e) => String(e.content ?? '')).join('');
    const failed = result && (result.status === 'error' || result.error);
    return {
      text: failed ? String((result.error as { message?: string } | undefined)?.message ?? 'turn failed') : said || String(result?.response ?? ''),
      sessionId: str(init?.session_id) ?? str(init?.sessionId),
      isError: Boolean(failed),
    };
  },
  sessionLost: (output) => /(session|checkpoint) .*not found|no session found|invalid session/i.test(output),
};

export const PRESET: Record<PresetName, Preset> = { claude, codex, gemini };

/** The program a command brain runs: its `command`, else its preset's. */
export function commandOf(spec: { command?: string | undefined; preset?: PresetName | undefined }): string {
  if (spec.command) return spec.command;
  if (spec.preset) return PRESET[spec.preset].program;
  return '';
}
