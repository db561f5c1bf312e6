import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { labelledHive } from './helpers/memory.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { GET_MEMORY_TOOL, runGetMemory } from '../src/memory/tool.ts';
import { isHiveError } from '../src/errors.ts';

describe('get_memory', () => {
  it('a module brain searches memory from inside its worker (ctx.memory.search)', async () => {
    const root = await labelledHive(['dba', 'finance']);
    const hive = await startHive({
      ...fastConfig({
        agents: [
          { id: 'librarian', brain: { kind: 'module', module: path.join(FIXTURES, 'brains', 'librarian.ts') } },
          { id: 'client', brain: { kind: 'external' } },
        ],
      }),
      root,
    });
    const replies = () => readInbox(root, 'client', 0).entries.map((e) => e.message.body);
    await hive.send({ from: 'client', to: 'librarian', act: 'request', body: 'PgBouncer transaction mode' });
    await waitFor(hive, () => replies().length === 1, 'first answer');
    expect(replies()[0]).toMatch(/^(grep|index): dba \| 2025-02-21 — Connection pool exhaustion \| .*PgBouncer/);
    await hive.mineMemory({ force: true });
    await hive.send({ from: 'client', to: 'librarian', act: 'request', body: 'runway burn fundraising' });
    await waitFor(hive, () => replies().length === 2, 'second answer');
    expect(replies()[1]).toMatch(/^index: finance \| 2025-03-02 — Runway estimate \| /);
  }, 90_000);

  it('describes itself as a tool (JSON schema) and validates tool-call arguments', async () => {
    expect(GET_MEMORY_TOOL).toMatchObject({ name: 'get_memory', parameters: { type: 'object', required: ['query'] } });
    expect(Object.keys(GET_MEMORY_TOOL.parameters.properties)).toEqual(['query', 'agent', 'limit']);
    const root = await labelledHive(['dba']);
    expect((await runGetMemory(root, { query: 'autovacuum', limit: 1 })).matches).toHaveLength(1);
    for (const bad of [null, { query: 'x', colour: 'red' }, { query: 'x', limit: 50 }, { query: '' }, { query: 'x', agent: '../etc' }]) {
      const err = await runGetMemory(root, bad).catch((e: unknown) => e);
      expect(isHiveError(err)).toBe(true);
    }
  });
});
