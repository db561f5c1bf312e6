import { z } from 'zod';

/**
 * The `memory` section of hive.config.ts. Every field has a default, so
 * `memory: {}` or no section at all is a working setup: built-in index, extractive
 * condenser, MemPalace used when `mempalace` is on PATH.
 */

const positiveInt = z.number().int().positive();

export const MemoryConfigSchema = z
  .object({
    /** Run the miner and reflector actors. */
    enabled: z.boolean().default(true),
    /** The miner's schedule: a full (changed-files-only) pass this often. */
    mineEveryMs: positiveInt.default(600_000),
    /** How often memory files are stat'ed for growth (cheap: one stat per agent). */
    checkEveryMs: positiveInt.default(5_000),
    /** Mine soon after a memory grew by this many bytes since its last mine. */
    growBytes: positiveInt.default(4_096),
    /** Rebuild palace/index.json once wings newer than it hold this many bytes. */
    snapshotBytes: positiveInt.default(262_144),
    /** Ignore patterns (gitignore syntax) for every agent, beside each `.mineignore`. */
    ignore: z.array(z.string()).default([]),
    /** Threads of the piscina pool the miner and the reflector share. */
    poolThreads: positiveInt.max(16).default(1),
    mempalace: z
      .object({
        enabled: z.boolean().default(true),
        /** Command name or path (relative to the config file); default `mempalace` on PATH. */
        command: z.string().min(1).optional(),
        args: z.array(z.string()).default([]),
        mineTimeoutMs: positiveInt.default(120_000),
        searchTimeoutMs: positiveInt.default(10_000),
      })
      .strict()
      .prefault({}),
    /** A command that reads entries on stdin and prints their summary (an LLM CLI). */
    summarizer: z
      .object({
        command: z.string().min(1),
        args: z.array(z.string()).default([]),
        timeoutMs: positiveInt.default(120_000),
      })
      .strict()
      .optional(),
    condense: z
      .object({
        /** Never condense below this size... */
        minBytes: positiveInt.default(16_384),
        /** ...and condense above this size... */
        maxBytes: positiveInt.default(65_536),
        /** ...or with more entries than this. */
        maxEntries: positiveInt.default(50),
        /** Newest entries kept byte-identical. */
        keepRecent: positiveInt.default(10),
        /** The size a condensed file aims at. */
        targetBytes: positiveInt.default(32_768),
        backupsKeep: positiveInt.default(5),
        /** How often the reflector looks for oversized memories. */
        checkEveryMs: positiveInt.default(60_000),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((m, ctx) => {
    if (m.condense.minBytes > m.condense.maxBytes) {
      ctx.addIssue({ code: 'custom', path: ['condense', 'minBytes'], message: `at most \`memory.condense.maxBytes\` (${m.condense.maxBytes})` });
    }
    if (m.condense.targetBytes >= m.condense.maxBytes) {
      ctx.addIssue({ code: 'custom', path: ['condense', 'targetBytes'], message: `less than \`memory.condense.maxBytes\` (${m.condense.maxBytes})` });
    }
  })
  .prefault({});

export type MemoryConfig = z.output<typeof MemoryConfigSchema>;
