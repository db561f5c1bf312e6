// Long on purpose: the whole configuration schema in one file, so every option, default and
// bound a user can set is read in one place.
import path from 'node:path';
import { z } from 'zod';
import { HiveError, describeValue } from '../errors.ts';
import { AGENT_ID_PATTERN, RESERVED_IDS, isAgentId } from '../protocol/agent-id.ts';
import { ACTS } from '../protocol/message.ts';
import { MemoryConfigSchema } from '../memory/config.ts';
import { PRESETS, commandOf } from '../brains/presets.ts';

/**
 * `hive.config.ts`: validated with zod. Every error names the config path
 * (`agents[2].brain.module`), what was expected and what was found.
 */

const agentId = z.string().refine((v) => isAgentId(v), { message: `an agent id matching ${AGENT_ID_PATTERN.source}` });
const positiveInt = z.number().int().positive();

const commandBrain = z
    .object({
      kind: z.literal('command'),
      /** The program: a path, or a name on PATH. With a preset, the preset's program unless given. */
      command: z.string().min(1).optional(),
      /** An agent CLI Hive knows (docs/architecture.md, "Agent CLIs"): its invocation, output, resume flag and config files. */
      preset: z.enum(PRESETS).optional(),
      args: z.array(z.string()).optional(),
      input: z.enum(['stdin', 'args']).optional(),
      output: z.enum(['text', 'json']).optional(),
      timeoutMs: positiveInt.optional(),
      cwd: z.string().optional(),
      env: z.record(z.string(), z.string()).optional(),
    })
    .strict();

const openaiBrain = z
    .object({
      kind: z.literal('openai'),
      baseURL: z.url(),
      model: z.string().min(1),
      apiKeyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/).optional(),
      timeoutMs: positiveInt.optional(),
      temperature: z.number().min(0).max(2).optional(),
    })
    .strict();

/** An XState v5 machine as the agent's behaviour (docs/architecture.md, "Machine agents"). */
const machineBrain = z
  .object({
    kind: z.literal('machine'),
    module: z.string().min(1),
    export: z.string().min(1).optional(),
    /** Given to the machine as its `input` when it first starts. */
    options: z.record(z.string(), z.unknown()).optional(),
    /** The agent's provider, for the machine's `hiveThink` actor. */
    provider: z.discriminatedUnion('kind', [commandBrain, openaiBrain]).optional(),
    /** Bound on one turn's invocations (ms; default 5 minutes). */
    timeoutMs: positiveInt.optional(),
  })
  .strict();

export const BrainSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('echo'), delayMs: z.number().int().min(0).optional() }).strict(),
  z
    .object({
      kind: z.literal('module'),
      module: z.string().min(1),
      export: z.string().min(1).optional(),
      options: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
  commandBrain,
  openaiBrain,
  machineBrain,
  z.object({ kind: z.literal('human') }).strict(),
  z.object({ kind: z.literal('external') }).strict(),
]);

export type BrainSpec = z.infer<typeof BrainSchema>;

/**
 * A brain's paths anchored at the config's folder: a module brain's file, and a command
 * brain's program when it is a path (`./bin/claude`; a bare name such as `claude` is looked
 * up on PATH when it runs) and its `cwd`.
 */
export function resolveBrainPaths(brain: BrainSpec, configDir: string): BrainSpec {
  if (brain.kind === 'module') return { ...brain, module: path.resolve(configDir, brain.module) };
  if (brain.kind === 'machine') {
    const provider = brain.provider ? (resolveBrainPaths(brain.provider, configDir) as typeof brain.provider) : undefined;
    return { ...brain, module: path.resolve(configDir, brain.module), ...(provider ? { provider } : {}) };
  }
  if (brain.kind === 'command') {
    const named = commandOf(brain);
    const command = named.includes('/') ? path.resolve(configDir, named) : named;
    return { ...brain, command, ...(brain.cwd !== undefined ? { cwd: path.resolve(configDir, brain.cwd) } : {}) };
  }
  return brain;
}

export const AgentConfigSchema = z
  .object({
    id: agentId.refine((v) => !RESERVED_IDS.has(v), { message: `an id that is not reserved (${[...RESERVED_IDS].join(', ')})` }),
    name: z.string().min(1).max(100).optional(),
    role: z.string().max(2_000).optional(),
    brain: BrainSchema,
    /** Put agents with the same host name in one worker thread (pooled hosts). */
    host: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/).optional(),
    /** This agent's turn deadline in ms (default: supervisor.turnTimeoutMs). */
    turnTimeoutMs: positiveInt.optional(),
    /** Cluster mode: the machine (its `cluster.host`) this agent runs on; absent, it runs wherever it holds the lease. */
    runsOn: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/).optional(),
  })
  .strict();

/** One hive over several machines, on NATS JetStream (docs/architecture.md, "Cluster mode"). */
export const ClusterSchema = z
  .object({
    /** NATS servers, e.g. ['nats://10.0.0.5:4222']. */
    servers: z.array(z.string().regex(/^(nats|tls):\/\/\S+$/)).min(1),
    /** This machine's name (what agents' `runsOn` names); `hive start --host` overrides it. */
    host: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/),
    /** Names the hive's streams and buckets on the NATS servers. */
    prefix: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/).default('hive'),
    /** Replicas of each stream (3 on a three-node NATS cluster). */
    replicas: z.number().int().min(1).max(5).default(1),
    /**
     * How long a machine holds an unpinned agent's lease without renewing it (ms): when its
     * machine dies, a survivor takes the agent over this long after the last renewal.
     */
    leaseMs: z.number().int().min(1_000).max(300_000).default(5_000),
  })
  .strict();

export type ClusterConfig = z.infer<typeof ClusterSchema>;

export type AgentConfig = z.infer<typeof AgentConfigSchema>;

const BackoffSchema = z
  .object({
    initialMs: positiveInt.default(100),
    maxMs: positiveInt.default(10_000),
    factor: z.number().min(1).default(2),
    jitter: z.number().min(0).max(1).default(0.2),
  })
  .strict();

const KickoffSchema = z
  .object({
    from: agentId,
    to: z.string().min(1),
    act: z.enum(ACTS),
    subject: z.string().optional(),
    body: z.string(),
    needs_human: z.boolean().optional(),
  })
  .strict();

// ---- observability: telemetry, event log, audit trail, inspector ----------

export const TelemetrySchema = z
  .object({
    /** OTLP/HTTP base URL of a collector (e.g. http://127.0.0.1:4318); traces go to /v1/traces. */
    otlpEndpoint: z.url(),
    serviceName: z.string().min(1).default('hive'),
    /** How often buffered spans and metrics are exported, in ms. */
    exportIntervalMs: positiveInt.default(1_000),
  })
  .strict();

export type TelemetryConfig = z.infer<typeof TelemetrySchema>;

export const LogSchema = z
  .object({
    /** `log.jsonl` is rotated to `log-<n>.jsonl` once it is larger than this. */
    maxBytes: positiveInt.default(10 * 1024 * 1024),
    /** Rotated files kept (the oldest are deleted). */
    keep: positiveInt.default(5),
    /** How often the supervisor checks the size, in ms. */
    checkMs: positiveInt.default(1_000),
  })
  .strict();

export const AuditSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** At most one commit per this many ms. */
    intervalMs: positiveInt.default(3_000),
  })
  .strict();

export const InspectorSchema = z
  .object({
    /** `hive start` serves the inspector on 127.0.0.1 unless false. */
    enabled: z.boolean().default(true),
    /** 0 picks a free port. */
    port: z.number().int().min(0).max(65_535).default(0),
  })
  .strict();

export const HiveConfigSchema = z
  .object({
    root: z.string().min(1),
    /** Who may read the hive: its owner only (0700/0600, the default), or also the owner's group, read-only. */
    permissions: z.enum(['owner', 'group']).default('owner'),
    agents: z.array(AgentConfigSchema).default([]),
    router: z
      .object({
        pollMs: positiveInt.default(2_000),
        hopCap: positiveInt.default(12),
        batchPerSender: positiveInt.default(1_024),
        sentCap: positiveInt.default(1_000),
      })
      .strict()
      .default({ pollMs: 2_000, hopCap: 12, batchPerSender: 1_024, sentCap: 1_000 }),
    supervisor: z
      .object({
        restart: z
          .object({
            maxRestarts: positiveInt.default(5),
            withinMs: positiveInt.default(60_000),
            backoff: BackoffSchema.default({ initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 }),
          })
          .strict()
          .default({ maxRestarts: 5, withinMs: 60_000, backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 } }),
        /** Agents per worker thread for agents without an explicit `host` (1 = isolation). */
        agentsPerWorker: positiveInt.default(1),
        /** ms a stopping actor may take to finish its turn before its worker is terminated. */
        stopGraceMs: positiveInt.default(5_000),
        /** Crashes of one message before it is dead-lettered as poison. */
        poisonAfter: positiveInt.default(3),
        /**
         * The tick of each agent host's safety poll, in ms (deliveries wake actors directly).
         * On one machine each inbox is looked at on one tick in 15 (docs/architecture.md,
         * "Idle agents cost nothing"); in cluster mode each agent's link checks on every tick.
         */
        inboxPollMs: positiveInt.default(2_000),
        /** Inbox entries handled per commit by fast brains (echo, module). */
        turnBatch: positiveInt.default(128),
        doneCap: positiveInt.default(5_000),
        /** In-place retries of a failed brain turn (non-zero exit, timeout, HTTP error). */
        brainRetries: z.number().int().min(0).default(2),
        /**
         * A brain turn running longer than this (ms) terminates its worker; the turn counts
         * as a crash (restart, then poison). Per agent: `agents[].turnTimeoutMs`.
         */
        turnTimeoutMs: positiveInt.default(600_000),
        /**
         * Old-space heap an agent's worker may use, in MB (default: the parent's
         * --max-old-space-size, else 512); a pooled host gets it once per agent it carries.
         */
        workerHeapMb: z.number().int().min(16).optional(),
      })
      .strict()
      .default({
        restart: { maxRestarts: 5, withinMs: 60_000, backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 } },
        agentsPerWorker: 1,
        stopGraceMs: 5_000,
        poisonAfter: 3,
        inboxPollMs: 2_000,
        turnBatch: 128,
        doneCap: 5_000,
        brainRetries: 2,
        turnTimeoutMs: 600_000,
      }),
    /** OpenTelemetry export; off (no-op API, ~zero cost) when absent. */
    telemetry: TelemetrySchema.optional(),
    log: LogSchema.default({ maxBytes: 10 * 1024 * 1024, keep: 5, checkMs: 1_000 }),
    audit: AuditSchema.default({ enabled: true, intervalMs: 3_000 }),
    inspector: InspectorSchema.default({ enabled: true, port: 0 }),
    sessions: z
      .object({
        transcriptLines: positiveInt.default(5_000),
        conversationTurns: positiveInt.default(400),
        historyBytes: positiveInt.default(512 * 1024),
        tailBriefChars: positiveInt.default(6_000),
        archiveEntries: positiveInt.default(60),
      })
      .strict()
      .default({ transcriptLines: 5_000, conversationTurns: 400, historyBytes: 512 * 1024, tailBriefChars: 6_000, archiveEntries: 60 }),
    hooks: z
      .object({
        /** Longest accepted hook event line, in bytes. */
        maxLineBytes: positiveInt.default(256 * 1024),
        /** Operator policy: PreToolUse events matching a rule are denied. */
        deny: z
          .array(
            z
              .object({
                tool: z.string().min(1),
                /** Regular expression tested against JSON.stringify(tool_input). */
                match: z
                  .string()
                  .refine(
                    (v) => {
                      try {
                        new RegExp(v);
                        return true;
                      } catch {
                        return false;
                      }
                    },
                    { message: 'Expected a valid regular expression' },
                  )
                  .optional(),
                agents: z.array(agentId).optional(),
                reason: z.string().optional(),
              })
              .strict(),
          )
          .default([]),
      })
      .strict()
      .default({ maxLineBytes: 256 * 1024, deny: [] }),
    /** Messages sent once when the hive starts (ids are stable, so a restart does not resend). */
    kickoff: z.array(KickoffSchema).default([]),
    /** Memory: the miner, the reflector, search (see src/memory/config.ts). */
    memory: MemoryConfigSchema,
    /** One hive across machines on NATS JetStream; absent: the filesystem transport on this machine. */
    cluster: ClusterSchema.optional(),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    cfg.agents.forEach((a, i) => {
      if (!cfg.cluster && a.runsOn) ctx.addIssue({ code: 'custom', path: ['agents', i, 'runsOn'], message: 'absent outside cluster mode (there is no `cluster` section)' });
    });
    const seen = new Map<string, number>();
    cfg.agents.forEach((a, i) => {
      if (seen.has(a.id)) {
        ctx.addIssue({ code: 'custom', path: ['agents', i, 'id'], message: `a unique id (agents[${seen.get(a.id)}] is also "${a.id}")` });
      }
      seen.set(a.id, i);
      const b = a.brain;
      if (b.kind === 'command' && !b.command && !b.preset) {
        ctx.addIssue({ code: 'custom', path: ['agents', i, 'brain', 'command'], message: `a command (a path, or a program on PATH) or a preset (${PRESETS.join(', ')})` });
      }
    });
  });

export type HiveConfigInput = z.input<typeof HiveConfigSchema>;
export type HiveConfig = z.output<typeof HiveConfigSchema> & { configDir: string; configFile: string | null };

function formatPath(p: PropertyKey[]): string {
  let out = '';
  for (const k of p) out += typeof k === 'number' ? `[${k}]` : out ? `.${String(k)}` : String(k);
  return out || '(config)';
}

function valueAt(input: unknown, p: PropertyKey[]): unknown {
  let v = input;
  for (const k of p) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function expectationOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected === 'int' ? 'an integer' : `${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`;
    case 'too_small':
      if (issue.origin === 'string') return 'a non-empty string';
      if (issue.origin === 'number') return Number(issue.minimum) === 0 && !issue.inclusive ? 'a positive number' : `a number ≥ ${issue.minimum}`;
      return `at least ${issue.minimum}`;
    case 'too_big':
      return `at most ${issue.maximum}`;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_union':
      return 'a brain with kind echo, module, machine, command, openai, human or external';
    case 'unrecognized_keys':
      return `no unknown keys (found ${issue.keys.map((k) => JSON.stringify(k)).join(', ')})`;
    case 'not_multiple_of':
      return `a multiple of ${issue.divisor}`;
    case 'invalid_format':
      return issue.format === 'url' ? 'a URL such as http://127.0.0.1:8080/v1' : `a ${issue.format}`;
    default:
      return issue.message;
  }
}

/**
 * Validates a config object. `configDir` anchors relative paths (root, module brains).
 * @example parseConfig({ root: './hive', agents: [{ id: 'a', brain: { kind: 'echo' } }] }, process.cwd())
 */
export function parseConfig(input: unknown, configDir: string, configFile: string | null = null): HiveConfig {
  const r = HiveConfigSchema.safeParse(input);
  if (!r.success) {
    const problems = r.error.issues.map((issue) => {
      const where = formatPath(issue.path);
      const fullPath = issue.code === 'unrecognized_keys' ? issue.path : issue.path;
      const expected = expectationOf(issue);
      const got = issue.code === 'unrecognized_keys' ? '' : `, got ${describeValue(valueAt(input, fullPath))}`;
      return { path: where, expected, message: `Expected \`${where}\` to be ${expected}${got}` };
    });
    throw new HiveError(
      'E_BAD_CONFIG',
      `Invalid hive config${configFile ? ` in ${configFile}` : ''}:\n${problems.map((p) => `  - ${p.message}`).join('\n')}`,
      { details: { problems } },
    );
  }
  const cfg = r.data;
  return {
    ...cfg,
    root: path.resolve(configDir, cfg.root),
    agents: cfg.agents.map((a) => ({ ...a, brain: resolveBrainPaths(a.brain, configDir) })),
    configDir,
    configFile,
  };
}

/**
 * Typed identity helper for `hive.config.ts`.
 * @example export default defineConfig({ root: './demo-hive', agents: [{ id: 'bob', brain: { kind: 'echo' } }] })
 */
export function defineConfig(config: HiveConfigInput): HiveConfigInput {
  return config;
}
