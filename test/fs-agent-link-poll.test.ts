import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { FsAgentLink } from '../src/queue/fs-agent-link.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { createMessage } from '../src/protocol/message.ts';
import { tempRoot } from './helpers/temp.ts';

describe('fs agent link: the safety poll of an idle agent', () => {
  it('wakes its listener only when inbox/.synced changed (a delivery), and every 15th tick regardless', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    const link = new FsAgentLink(root, 'a', { pollMs: 3_600_000 }); // ticks are driven by hand
    let woken = 0;
    link.onWork(() => (woken += 1));
    const tick = () => (link as unknown as { pollTick(): void }).pollTick();

    tick();
    expect(woken).toBe(1); // the first look: nothing known yet
    for (let i = 0; i < 10; i++) tick();
    expect(woken).toBe(1); // idle: one lstat per tick, no wake

    // A delivery by the router's transport rewrites .synced: the next tick wakes.
    const router = createFsTransport(root);
    await router.deliver('a', [createMessage({ from: 'god', to: 'a', act: 'inform', body: 'hello' })]);
    router.close();
    expect(fs.existsSync(path.join(agentPaths(root, 'a').inbox, '.synced'))).toBe(true);
    tick();
    expect(woken).toBe(2);

    for (let i = 0; i < 14; i++) tick();
    expect(woken).toBe(2);
    tick(); // the 15th unchanged tick: a wake anyway (a listener that missed one hears again)
    expect(woken).toBe(3);
    link.close();
  });
});
