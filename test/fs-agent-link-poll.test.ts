import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { FsAgentLink } from '../src/queue/fs-agent-link.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { createMessage } from '../src/protocol/message.ts';
import { tempRoot } from './helpers/temp.ts';
import { crashRouter, fastConfig, nextEvent, startHive } from './helpers/hive.ts';

/** A hive with agent `a`, its link restored (polls driven by hand), and a context at a given cursor. */
async function restoredLink() {
  const root = tempRoot();
  await ensureHive(root);
  await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
  const link = new FsAgentLink(root, 'a', { pollMs: 3_600_000 });
  await link.restore();
  const context = (cursor: number) => ({ agentId: 'a', cursor, handled: cursor, turns: cursor, brainState: null, timers: [] });
  return { root, link, context };
}

describe('fs agent link: the safety poll of an idle agent', () => {
  it('looks at its inbox on one tick in 15 and wakes its listener when entries wait after its cursor; lookNow looks at once', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    const router = createFsTransport(root);
    const deliver = (body: string) => router.deliver('a', [createMessage({ from: 'god', to: 'a', act: 'inform', body })]);
    const link = new FsAgentLink(root, 'a', { pollMs: 3_600_000 }); // ticks are driven by hand
    let woken = 0;
    link.onWork(() => (woken += 1));
    const tick = () => (link as unknown as { pollTick(): void }).pollTick();

    // Nothing was ever delivered: the looks find no inbox and wake no one.
    for (let i = 0; i < 30; i++) tick();
    expect(woken).toBe(0);

    // A delivery by the router's transport: the link's next look (not the next tick) wakes.
    await deliver('hello');
    expect(fs.existsSync(path.join(agentPaths(root, 'a').inbox, '.synced'))).toBe(true);
    for (let i = 0; i < 14; i++) tick();
    expect(woken).toBe(0);
    tick();
    expect(woken).toBe(1);

    // The entry still waits after the cursor (0): the next look wakes again (a listener
    // that missed a wake hears again).
    for (let i = 0; i < 14; i++) tick();
    expect(woken).toBe(1);
    tick();
    expect(woken).toBe(2);

    // lookNow (a new router: the dead one's wake may be lost) looks at once, between ticks.
    await deliver('again');
    link.lookNow();
    expect(woken).toBe(3);
    router.close();
    link.close();
  });

  it('an idle link whose cursor is at the end of its inbox is not woken by its looks', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'a', brain: { kind: 'echo' } });
    const router = createFsTransport(root);
    await router.deliver('a', [createMessage({ from: 'god', to: 'a', act: 'inform', body: 'one' }), createMessage({ from: 'god', to: 'a', act: 'inform', body: 'two' })]);
    router.close();
    const link = new FsAgentLink(root, 'a', { pollMs: 3_600_000 });
    await link.restore();
    expect(link.hasEntriesAfter(0)).toBe(true);
    expect(link.hasEntriesAfter(2)).toBe(false);
    await link.commit({ agentId: 'a', cursor: 2, handled: 2, turns: 1, brainState: null, timers: [] }, []);
    let woken = 0;
    link.onWork(() => (woken += 1));
    const tick = () => (link as unknown as { pollTick(): void }).pollTick();
    for (let i = 0; i < 45; i++) tick(); // three looks
    expect(woken).toBe(0);
    link.close();
  });

  it('the links of one transport share one poll timer, and their looks are spread over its ticks', async () => {
    const root = tempRoot();
    await ensureHive(root);
    const ids = Array.from({ length: 30 }, (_, i) => `a${i}`);
    for (const id of ids) await ensureAgent(root, { id, brain: { kind: 'echo' } });
    const intervals = vi.spyOn(globalThis, 'setInterval');
    const cleared = vi.spyOn(globalThis, 'clearInterval');
    try {
      const t = createFsTransport(root, { pollMs: 3_600_000 }); // ticks are driven by hand
      // Each inbox holds an entry its agent has not committed (cursor 0): its look wakes it.
      for (const id of ids) await t.deliver(id, [createMessage({ from: 'god', to: id, act: 'inform', body: 'waiting' })]);
      const wakes = new Map<string, number>(ids.map((id) => [id, 0]));
      const links = ids.map((id) => {
        const link = t.agent(id);
        link.onWork(() => wakes.set(id, wakes.get(id)! + 1));
        return link;
      });
      expect(intervals).toHaveBeenCalledTimes(1); // 30 links, one timer
      const tick = intervals.mock.calls[0]![0] as () => void;
      // Idle: over the first 15 ticks each link wakes once, and never all on one tick.
      const perTick: number[] = [];
      for (let i = 0; i < 15; i++) {
        const before = [...wakes.values()].reduce((a, b) => a + b, 0);
        tick();
        perTick.push([...wakes.values()].reduce((a, b) => a + b, 0) - before);
      }
      expect([...wakes.values()].every((n) => n === 1)).toBe(true);
      expect(Math.max(...perTick)).toBe(2); // 30 links over 15 ticks
      for (const link of links.slice(0, 29)) link.close();
      expect(cleared).not.toHaveBeenCalled(); // one link still listens: the timer stays
      t.close();
      expect(cleared).toHaveBeenCalledTimes(1);
    } finally {
      intervals.mockRestore();
      cleared.mockRestore();
    }
  });

  it('cursor.json mirrors the last committed cursor after a close, even with a mirror write still under way', async () => {
    const { root, link, context } = await restoredLink();
    await link.commit(context(1), []);
    await new Promise((r) => setTimeout(r, 300)); // the lazy mirror (250 ms) is under way or done
    for (let c = 2; c <= 5; c++) await link.commit(context(c), []);
    link.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'a').cursor, 'utf8')).seq).toBe(5);
  });

  it('a close with a cursor mirror write under way resolves once it landed: no temp file is left behind, cursor.json holds the last cursor', async () => {
    // A graceful stop ended the host thread before the write under way was renamed: the
    // full suite found `.tmp-cursor.json-<pid>-…` in an agent folder after the supervisor
    // SIGKILL test's final stop (swept at the next start, but left by a clean stop).
    const { root, link, context } = await restoredLink();
    for (let c = 1; c <= 3; c++) await link.commit(context(c), []);
    (link as unknown as { mirrorCursorSoon(): void }).mirrorCursorSoon(); // the lazy mirror starts now, off this thread
    await link.close();
    // A write still under way finishes its temp file meanwhile, not its rename (that needs this thread).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30);
    const dir = agentPaths(root, 'a').dir;
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    expect(JSON.parse(fs.readFileSync(agentPaths(root, 'a').cursor, 'utf8')).seq).toBe(3);
  });
});

describe('a lost wake', () => {
  it("a router that died between its inbox flush and its wake: the new router's link makes the agent look at once, not at its poll's next look", async () => {
    const root = tempRoot();
    const hive = await startHive(
      fastConfig({
        root,
        agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }],
        // The poll cannot help (a look every 15 minutes); the router comes back after 3 s.
        supervisor: { inboxPollMs: 60_000, restart: { backoff: { initialMs: 3_000, maxMs: 3_000, factor: 1, jitter: 0 } } },
      }),
    );
    await crashRouter(hive);
    // The dead router's last flush, which no wake followed: written by another instance
    // while no router runs, as the router thread would have written it.
    const writer = createFsTransport(root);
    const request = createMessage({ from: 'client', to: 'echo', act: 'request', body: 'lost wake' });
    await writer.deliver('echo', [request]);
    writer.close();
    // Written before the new router linked to the host (else its look came too early to see it).
    expect(hive.supervisor.routerWorker()).toBeNull();
    const t0 = Date.now();
    const reply = await nextEvent(hive, 'delivered', (d) => d.agent === 'client', 20_000);
    expect(reply.from).toBe('echo');
    expect(Date.now() - t0).toBeLessThan(15_000);
  });
});
