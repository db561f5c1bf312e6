import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { readInbox } from '../src/queue/inbox.ts';

const counter = { kind: 'machine' as const, module: path.join(FIXTURES, 'machines', 'counter.ts') };
const client = { id: 'client', brain: { kind: 'external' as const } };

function inbox(root: string, id: string) {
  return readInbox(root, id, 0).entries.map((e) => e.message);
}

describe('machine agents', () => {
  it('a request becomes an event; hiveReply answers it', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'm', brain: counter }, client] }));
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'one' });
    await hive.send({ from: 'client', to: 'm', act: 'request', body: 'two' });
    await waitFor(hive, () => inbox(hive.root, 'client').length === 2, 'two replies');
    expect(inbox(hive.root, 'client').map((m) => m.body)).toEqual(['count 1', 'count 2']);
  });
});
