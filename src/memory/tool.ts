import { HiveError, describeValue } from '../errors.ts';
import { AGENT_ID_PATTERN } from '../protocol/agent-id.ts';
import type { MemorySearchOptions, MemorySearchResult } from './search.ts';

/**
 * get_memory as a tool description (name, description, JSON-schema parameters), for
 * providers that offer tools to a model. The call itself is `runGetMemory`.
 */
export const GET_MEMORY_TOOL = {
  name: 'get_memory',
  description:
    "Search the hive's long-term memory: what agents wrote down in their memory.md (decisions, facts, how-tos). " +
    'Returns the best matching entries with their agent, heading and an excerpt. Search by topic words; ' +
    'pass `agent` to search one agent only.',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to look for, in a few words', minLength: 1 },
      agent: { type: 'string', description: "Only this agent's memory (an agent id)", pattern: AGENT_ID_PATTERN.source },
      limit: { type: 'integer', description: 'At most this many matches', minimum: 1, maximum: 20, default: 5 },
    },
    required: ['query'],
    additionalProperties: false,
  },
} as const;

/** What a brain gets as `ctx.memory`. */
export interface MemoryAccess {
  /**
   * get_memory from inside an agent: reads the palace from disk (no round trip to the
   * main thread); the index stays loaded in the worker between calls.
   * @example const { matches } = await ctx.memory.search('rollback procedure', { limit: 3 });
   */
  search(query: string, options?: MemorySearchOptions): Promise<MemorySearchResult>;
}

/** `ctx.memory` for a hive root. The search code loads on first use (agent workers start lean). */
export function memoryAccess(root: string): MemoryAccess {
  return {
    async search(query, options) {
      const { searchMemory } = await import('./search.ts');
      return searchMemory(root, query, options);
    },
  };
}

/**
 * Runs get_memory with arguments as a model produced them (validated against the schema).
 * @example await runGetMemory(root, { query: 'pricing', limit: 3 })
 */
export async function runGetMemory(root: string, args: unknown): Promise<MemorySearchResult> {
  if (typeof args !== 'object' || args === null) throw new HiveError('E_BAD_ARGS', `Expected get_memory arguments as an object, got ${describeValue(args)}`);
  const { query, agent, limit, ...extra } = args as Record<string, unknown>;
  const unknown = Object.keys(extra);
  if (unknown.length > 0) throw new HiveError('E_BAD_ARGS', `get_memory takes query, agent and limit; got unknown ${unknown.join(', ')}`);
  if (agent !== undefined && typeof agent !== 'string') throw new HiveError('E_BAD_ARGS', `Expected get_memory \`agent\` to be an agent id, got ${describeValue(agent)}`);
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 20)) {
    throw new HiveError('E_BAD_ARGS', `Expected get_memory \`limit\` to be an integer from 1 to 20, got ${describeValue(limit)}`);
  }
  return memoryAccess(root).search(query as string, { ...(agent !== undefined ? { agent } : {}), ...(limit !== undefined ? { limit } : {}) });
}
