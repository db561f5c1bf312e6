import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createDirectoryCache } from '../src/router/directory.ts';
import { tempRoot } from './helpers/temp.ts';

afterEach(() => vi.useRealTimers());

describe('router directory cache', () => {
  it('sees a new agent at once, an inbox replaced in a folder within a second, and a fixed one again; it tells each refusal once', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const root = tempRoot();
    await ensureHive(root);
    for (const id of ['a', 'b', 'c']) await ensureAgent(root, { id, brain: { kind: 'echo' } });
    const refused: string[] = [];
    const directory = createDirectoryCache(root, (id, reason) => refused.push(`${id}: ${reason}`));
    expect([...directory().all].filter((id) => /^[abc]$/.test(id)).sort()).toEqual(['a', 'b', 'c']);

    // b's inbox becomes a symbolic link: neither the registry nor the agents folder changes.
    const inbox = agentPaths(root, 'b').inbox;
    fs.rmSync(inbox, { recursive: true });
    fs.symlinkSync(agentPaths(root, 'a').inbox, inbox);
    expect(directory().all.has('b')).toBe(true); // not looked at again yet
    vi.setSystemTime(Date.now() + 1_100);
    const after = directory();
    expect(after.all.has('b')).toBe(false);
    expect(refused).toEqual([expect.stringMatching(/^b: .*inbox is a symbolic link/)]);
    expect(directory()).toBe(after); // nothing changed since: the same directory, no new read

    // A new agent (registry rewritten, a new folder): the very next look has it, without the clock moving.
    await ensureAgent(root, { id: 'd', brain: { kind: 'echo' } });
    expect(directory().all.has('d')).toBe(true);

    // A folder swapped for a symbolic link (the agents folder changes): refused at the next look.
    const dDir = agentPaths(root, 'd').dir;
    fs.renameSync(dDir, `${dDir}.moved`);
    fs.symlinkSync(`${dDir}.moved`, dDir);
    expect(directory().all.has('d')).toBe(false);
    expect(refused.filter((r) => r.startsWith('d: '))).toEqual([expect.stringMatching(/folder is a symbolic link/)]);

    // The refused folder is fixed: looked at again within a second, whatever the rotation.
    fs.rmSync(inbox);
    fs.mkdirSync(inbox);
    vi.setSystemTime(Date.now() + 1_100);
    expect(directory().all.has('b')).toBe(true);
    expect(refused.filter((r) => r.startsWith('b: '))).toHaveLength(1);
  });

  it('its 60 s look reads again only when the registry or the agents folder differs in content', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const root = tempRoot();
    await ensureHive(root);
    for (const id of ['a', 'b']) await ensureAgent(root, { id, brain: { kind: 'echo' } });
    const directory = createDirectoryCache(root);
    const first = directory();
    vi.setSystemTime(Date.now() + 61_000);
    // Nothing differs: the same directory (a read would build a new one: at 10,000 agents a
    // 70–100 ms stall of the router every minute).
    expect(directory()).toBe(first);
    vi.setSystemTime(Date.now() + 61_000);
    expect(directory()).toBe(first);
    // A new agent is read at once, as before.
    await ensureAgent(root, { id: 'c', brain: { kind: 'echo' } });
    const third = directory();
    expect(third).not.toBe(first);
    expect(third.all.has('c')).toBe(true);
  });
});
