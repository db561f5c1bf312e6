import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { watchOutboxes } from '../src/router/outbox-watcher.ts';
import { tempDir } from './helpers/temp.ts';

const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(process.platform !== 'linux')('router: outbox watcher', () => {
  it('reports a file arriving in an outbox and a new agent; not the outboxes already there when it starts (the first pass sweeps them)', async () => {
    const agents = tempDir();
    for (const id of ['alice', 'bob']) fs.mkdirSync(path.join(agents, id, 'outbox'), { recursive: true });
    fs.writeFileSync(path.join(agents, 'bob', 'outbox', 'early.json'), '{}'); // before the watch: the sweep's
    const changed: string[] = [];
    const w = watchOutboxes(agents, (id) => changed.push(id), (err) => changed.push(`error: ${String(err)}`));
    try {
      await settle();
      expect(changed).toEqual([]);
      fs.writeFileSync(path.join(agents, 'alice', 'outbox', 'x.json'), '{}');
      await settle();
      expect([...new Set(changed)]).toEqual(['alice']); // a create and a change: once or twice
      fs.mkdirSync(path.join(agents, 'carol', 'outbox'), { recursive: true });
      await settle(400);
      expect(changed).toContain('carol'); // a new agent's outbox is read once watched
      // What a light look relies on: a watch of that outbox that works (none for an agent without one).
      expect(['alice', 'bob', 'carol', 'dave'].map((id) => w.watching(id))).toEqual([true, true, true, false]);
      // An outbox removed and made again: the old watch is dead; it is watched again, and files in the new one are reported.
      fs.rmSync(path.join(agents, 'alice', 'outbox'), { recursive: true });
      fs.mkdirSync(path.join(agents, 'alice', 'outbox'));
      await settle(400);
      expect(w.watching('alice')).toBe(true);
      changed.length = 0;
      fs.writeFileSync(path.join(agents, 'alice', 'outbox', 'y.json'), '{}');
      await settle();
      expect(changed).toContain('alice');
    } finally {
      await w.close();
    }
  });
});
