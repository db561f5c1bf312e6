import { parseConfig, type HiveConfig, type HiveConfigInput } from './config/schema.ts';
import type { RegistryEntry } from './registry/registry.ts';
import type { HiveMessage, HiveMessageInput } from './protocol/message.ts';
import { Supervisor, type ActorStatus } from './supervisor/supervisor.ts';
import type { TestSeams } from './testing/seams.ts';
import { agentToken } from './hooks/agent-token.ts';
import type { HiveEventMap, HiveEventName } from './supervisor/events.ts';
import type { ObserveOptions } from './telemetry/observer.ts';
import type { Question } from './human/questions.ts';
import { remember, type MemoryInput, type RememberOptions, type Remembered } from './memory/remember.ts';
import { searchMemory, type MemorySearchOptions, type MemorySearchResult } from './memory/search.ts';
import { memoryStatus, type MemoryStatus } from './memory/status.ts';
import type { MinePassResult } from './memory/mine.ts';
import type { ReflectResult } from './memory/reflect.ts';
import { listDeadLetters, type DeadLetterEntry } from './queue/dead-letter.ts';
import { discardDeadLetters, retryDeadLetters, showDeadLetter, type DeadLetterDetail } from './queue/dead-letter-tools.ts';

/** A running (or startable) hive. */
export interface Hive {
  readonly root: string;
  readonly config: HiveConfig;
  /** Takes hive.lock, restores every actor, replays inboxes, then starts routing. */
  start(): Promise<void>;
  /** Adds an agent at runtime (kept in registry.json, so it is back after a restart). */
  spawn(spec: unknown): Promise<RegistryEntry>;
  /** Stops an agent's actor; it stays stopped until spawned again. */
  stop(id: string): Promise<void>;
  /** Durably accepts a message from its sender (the send log; resolves once on disk; concurrent sends share one flush). */
  send(message: HiveMessageInput): Promise<HiveMessage>;
  status(): ActorStatus[];
  /** Questions for the people in the loop (open ones by default). */
  questions(options?: { open?: boolean }): Question[];
  /** Answers a question in its conversation; the asker's actor continues. */
  answer(questionId: string, body: string): HiveMessage;
  on<K extends HiveEventName>(event: K, listener: (event: HiveEventMap[K]) => void): () => void;
  // ---- dead letters ----
  /** Dead letters with their reasons, oldest first. */
  deadLetters(): DeadLetterEntry[];
  /** One dead letter: its reason, content and the message it holds. */
  deadLetter(name: string): DeadLetterDetail;
  /** Sends dead letters again, each as a new message (delivered exactly once), and archives them. */
  retryDeadLetters(names: string[]): HiveMessage[];
  /** Moves dead letters to `dead-letter/.archive/` (never deleted). */
  discardDeadLetters(names: string[]): void;
  /** The hooks token of an agent (HIVE_AGENT_TOKEN), for an agent CLI run outside the hive. */
  agentToken(id: string): string;
  /** Graceful stop: finish or abandon in-flight turns, commit, release the lock. */
  close(): Promise<void>;
  // ---- memory (docs/architecture.md, "Memory") ----
  /** Durably appends an entry to an agent's memory.md (the miner and reflector are told). */
  remember(agent: string, entry: MemoryInput, options?: RememberOptions): Promise<Remembered>;
  /** get_memory: MemPalace, the built-in index, or plain text search. */
  searchMemory(query: string, options?: MemorySearchOptions): Promise<MemorySearchResult>;
  memoryStatus(): MemoryStatus;
  /** Mines now (changed files only unless `force`) and resolves with the pass. */
  mineMemory(options?: { force?: boolean }): Promise<MinePassResult>;
  /** Condenses an agent's memory now (even below the thresholds unless `force: false`). */
  condenseMemory(agent: string, options?: { force?: boolean }): Promise<ReflectResult>;
  /** @internal The supervisor, for tests and tools. */
  readonly supervisor: Supervisor;
}

function isParsed(config: HiveConfigInput | HiveConfig): config is HiveConfig {
  return typeof (config as HiveConfig).configDir === 'string';
}

/** How `createHive` is set up beside the config. */
export interface CreateHiveOptions {
  /** Relative paths of the config resolve against this folder (default: the current one). */
  configDir?: string;
  /** Telemetry exporters and readers of the caller's own (tests, embedding apps). */
  observe?: ObserveOptions;
  /** @internal Test seams (src/testing/seams.ts). */
  testing?: TestSeams;
}

/**
 * Creates a hive from a config object (as `hive.config.ts` exports it). Relative paths
 * resolve against `configDir` (default: the current directory).
 * @example
 * const hive = createHive({ root: './my-hive', agents: [{ id: 'echo', brain: { kind: 'echo' } }] });
 * await hive.start();
 * hive.on('processed', (e) => console.log(e.agent, e.sent));
 * await hive.send({ from: 'god', to: 'echo', act: 'request', body: 'ping' });
 */
export function createHive(config: HiveConfigInput | HiveConfig, options: CreateHiveOptions = {}): Hive {
  const parsed = isParsed(config) ? config : parseConfig(config, options.configDir ?? process.cwd());
  const supervisor = new Supervisor(parsed, options.observe ?? {}, options.testing ?? {});
  return {
    root: parsed.root,
    config: parsed,
    supervisor,
    start: () => supervisor.start(),
    spawn: (spec) => supervisor.spawn(spec),
    stop: (id) => supervisor.stop(id),
    send: (message) => supervisor.send(message),
    status: () => supervisor.status(),
    questions: (options) => supervisor.questions(options ?? { open: true }),
    answer: (questionId, body) => supervisor.answer(questionId, body),
    on: (event, listener) => supervisor.events.on(event, listener),
    close: () => supervisor.close(),
    agentToken: (id) => agentToken(parsed.root, id),
    deadLetters: () => listDeadLetters(parsed.root),
    deadLetter: (name) => showDeadLetter(parsed.root, name),
    retryDeadLetters: (names) => {
      const retried = retryDeadLetters(parsed.root, names).map((r) => r.message);
      supervisor.kickRouter([...new Set(retried.map((m) => m.from))]);
      supervisor.observer?.note(`retried ${retried.length} dead letter(s)`);
      return retried;
    },
    discardDeadLetters: (names) => {
      discardDeadLetters(parsed.root, names);
      supervisor.observer?.note(`discarded ${names.length} dead letter(s)`);
    },
    remember: async (agent, entry, opts) => {
      const r = await remember(parsed.root, agent, entry, opts);
      supervisor.memory.notify(agent);
      supervisor.observer?.note(`remembered for ${agent}`); // the audit trail commits it soon, not at the next sweep
      return r;
    },
    searchMemory: (query, opts) => searchMemory(parsed.root, query, opts),
    memoryStatus: () => memoryStatus(parsed.root),
    mineMemory: (opts) => supervisor.memory.mine(opts?.force === true),
    condenseMemory: (agent, opts) => supervisor.memory.condense(agent, opts?.force !== false),
  };
}
