import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentPaths } from '../src/layout/paths.ts';

// Path objects are built once per agent and kept (src/layout/paths.ts): a router looking at
// every agent of a 10,000-agent hive asks for each of them several times a pass.

describe('agent paths', () => {
  it('are the joined paths of the agent folder, for absolute and relative roots', () => {
    for (const root of ['/tmp/hive-paths', 'relative/hive', '/tmp/hive-paths/../other/']) {
      const p = agentPaths(root, 'alice');
      const dir = path.join(path.resolve(root), 'agents', 'alice');
      expect(p.dir).toBe(dir);
      expect(p.sent).toBe(path.join(dir, 'outbox', '.sent'));
      expect(p.stateWal).toBe(path.join(dir, 'state.wal'));
      expect(p.committed).toBe(path.join(dir, 'committed'));
    }
  });

  it('are kept for 10,000 agents: a second pass over them builds none again', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `kept-${i}`);
    const first = ids.map((id) => agentPaths('/tmp/hive-paths-kept', id));
    const again = ids.map((id) => agentPaths('/tmp/hive-paths-kept', id));
    expect(again.every((p, i) => p === first[i])).toBe(true);
  });

  it('refuse an id that could leave the agents folder', () => {
    for (const id of ['../x', 'a/b', '', '.']) expect(() => agentPaths('/tmp/hive-paths', id)).toThrow();
  });
});
