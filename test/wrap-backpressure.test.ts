import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { FsAgentLink } from '../src/queue/fs-agent-link.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { DEFAULT_ROUTER_SETTINGS, routeOnce } from '../src/router/route.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { readCommitted } from '../src/queue/commit-outbox.ts';
import type { PersistedAgentContext } from '../machines/agent.ts';

/**
 * Back-pressure at the wrap (docs/architecture.md, "The commit record is the outbox"): a
 * commit that would wrap the log over lines the router has not routed waits for the router
 * (up to a second) instead of writing those messages again as outbox files; a router that
 * does not come within that time gets the spill, and nothing is lost either way.
 */

async function hive() {
  const root = tempRoot();
  await ensureHive(root);
  for (const id of ['a', 'b']) await ensureAgent(root, { id, brain: { kind: 'echo' } });
  return root;
}

// Lines of ~2.4 KiB: the 64 KiB log wraps about every 27 commits.
const context = (turns: number): PersistedAgentContext => ({ agentId: 'a', cursor: turns, handled: turns, turns, brainState: { pad: 'x'.repeat(2_000) }, timers: [] });
const note = (i: number): HiveMessage => createMessage({ from: 'a', to: 'b', act: 'inform', body: `note ${i}` });
const outboxFiles = (root: string) => fs.readdirSync(agentPaths(root, 'a').outbox).filter((n) => n.endsWith('.json'));
const spills = (root: string) => (fs.readFileSync(`${root}/log.jsonl`, 'utf8').match(/"type":"outbox.spilled"/g) ?? []).length;

async function drain(root: string) {
  const t = createFsTransport(root);
  for (let pass = 0; pass < 50; pass++) {
    const r = await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    if (r.delivered.length === 0 && !r.more) break;
  }
}

function expectEachOnce(root: string, sent: HiveMessage[]) {
  const got = listInbox(root, 'b').map((e) => e.id);
  expect(new Set(got).size).toBe(got.length);
  expect([...got].sort()).toEqual(sent.map((m) => m.id).sort());
}

describe('the commit log waits for the router before it wraps', () => {
  it('a router that is slow but routing: the agent waits at each wrap, nothing is spilled, each message is delivered once', async () => {
    const root = await hive();
    const link = new FsAgentLink(root, 'a', { pollMs: 60_000 });
    await link.restore();
    const t = createFsTransport(root);
    let routing = true;
    // A router that routes every 40 ms: the agent's 100 commits outrun it.
    const router = (async () => {
      while (routing) {
        await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    const sent: HiveMessage[] = [];
    let waits = 0;
    for (let i = 1; i <= 100; i++) {
      const m = note(i);
      sent.push(m);
      const t0 = Date.now();
      await link.commit(context(i), [m]);
      if (Date.now() - t0 >= 10) waits++;
    }
    routing = false;
    await router;
    link.close();
    expect(waits).toBeGreaterThan(0); // it did wait at a wrap
    expect(spills(root)).toBe(0);
    expect(outboxFiles(root)).toEqual([]);
    await drain(root);
    expectEachOnce(root, sent);
  });

  it('no router at all: after the wait the unrouted messages are spilled, and a router started later delivers each once', async () => {
    const root = await hive();
    const link = new FsAgentLink(root, 'a', { pollMs: 60_000 });
    await link.restore();
    const sent: HiveMessage[] = [];
    const t0 = Date.now();
    for (let i = 1; i <= 40; i++) {
      const m = note(i);
      sent.push(m);
      await link.commit(context(i), [m]);
    }
    link.close();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900); // one wrap, one wait of a second
    expect(spills(root)).toBe(1);
    expect(outboxFiles(root).length).toBeGreaterThan(0);
    await drain(root);
    expectEachOnce(root, sent);
  });

  it('a line over a quarter of the log grows the log to hold four such lines: big batches append, not checkpoint every commit', async () => {
    const root = await hive();
    const link = new FsAgentLink(root, 'a', { pollMs: 60_000 });
    await link.restore();
    const t = createFsTransport(root);
    // ~40 KiB lines (a turn of 128 replies is about that): more than half the 64 KiB log.
    const big = (turns: number): PersistedAgentContext => ({ ...context(turns), brainState: { pad: 'x'.repeat(40_000) } });
    const sent: HiveMessage[] = [];
    for (let i = 1; i <= 12; i++) {
      const m = note(i);
      sent.push(m);
      await link.commit(big(i), [m]);
      await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    }
    link.close();
    // Grown once at the first wrap (to 256 KiB: four 40 KiB lines fit), then plain appends:
    // the log holds the newest commits as lines, and state.json is not rewritten each turn.
    expect(fs.statSync(agentPaths(root, 'a').stateWal).size).toBe(256 * 1024);
    const checkpoint = JSON.parse(fs.readFileSync(agentPaths(root, 'a').state, 'utf8')) as { commit: number };
    expect(checkpoint.commit).toBeLessThan(10);
    await drain(root);
    expectEachOnce(root, sent);
  });
  it('commits told to the router (the host\'s kick) across wraps: each delivered once; a commit that spilled tells nothing, so the router reads the files', async () => {
    const root = await hive();
    const link = new FsAgentLink(root, 'a', { pollMs: 60_000 });
    await link.restore();
    expect(link.takeCommitHints()).toBeNull(); // the start's kick: the router reads everything
    const t = createFsTransport(root);
    const route = async () => {
      const hints = link.takeCommitHints();
      // Told only once durable and marked: the marker already names every commit told.
      for (const h of hints ?? []) expect(readCommitted(root, 'a')).toBeGreaterThanOrEqual(h.commit);
      if (hints) t.offerCommits(hints);
      await routeOnce({ root, transport: t, senders: ['a'], ...(hints ? { light: new Set(['a']) } : {}), settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
      return hints;
    };
    const sent: HiveMessage[] = [];
    let told = 0;
    for (let i = 1; i <= 100; i++) {
      sent.push(note(i));
      await link.commit(context(i), [sent.at(-1)!]);
      told += (await route())?.length ?? 0;
    }
    expect(told).toBe(100); // every commit told, the ones that wrapped too (three wraps)
    expectEachOnce(root, sent);
    // No router for a while: the next wrap spills, and that run of commits is not told.
    for (let i = 101; i <= 140; i++) {
      sent.push(note(i));
      await link.commit(context(i), [sent.at(-1)!]);
    }
    expect(spills(root)).toBe(1);
    expect(await route()).toBeNull();
    await drain(root);
    link.close();
    expectEachOnce(root, sent);
  });
});
