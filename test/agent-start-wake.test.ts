import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import type { Transport } from '../src/queue/transport.ts';
import { createMessage } from '../src/protocol/message.ts';
import { AgentActor } from '../src/agent/agent-actor.ts';
import { createEchoBrain } from '../src/brains/echo.ts';
import { DEFAULT_SESSION_CAPS } from '../src/session/types.ts';
import type { AgentSettings } from '../src/protocol/worker.ts';

const SETTINGS: AgentSettings = {
  turnBatch: 8,
  brainRetries: 0,
  sessionCaps: DEFAULT_SESSION_CAPS,
  poisonAfter: 3,
  doneCap: 5_000,
  inboxPollMs: 60_000, // no poll tick within the test: what happens is the start's doing, or a delivery's
  gapWaitMs: 50,
};

/** The fs transport with its links' inbox reads counted. */
function counting(t: Transport): { transport: Transport; fetches: () => number } {
  let fetches = 0;
  const transport: Transport = {
    ...t,
    agent(id) {
      const link = t.agent(id);
      const fetch = link.fetch.bind(link);
      link.fetch = async (afterSeq, limit) => {
        fetches += 1;
        return fetch(afterSeq, limit);
      };
      return link;
    },
  };
  return { transport, fetches: () => fetches };
}

function startEcho(root: string, transport: Transport): Promise<AgentActor> {
  const actor = new AgentActor({
    root,
    spec: { id: 'echo', name: 'echo', role: 'agent', brain: { kind: 'echo' } },
    brain: createEchoBrain(),
    settings: SETTINGS,
    emit: () => undefined,
    onFatal: (err) => {
      throw err;
    },
    transport,
  });
  return actor.start().then(() => actor);
}

async function until(what: string, ok: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('an agent actor at start', () => {
  it('replays the entries after its cursor by itself, and with nothing after it reads nothing until a delivery', async () => {
    const root = tempRoot();
    await ensureHive(root);
    await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
    await ensureAgent(root, { id: 'echo', brain: { kind: 'echo' } });
    const fs = createFsTransport(root, { pollMs: 60_000 });
    const request = (body: string) => createMessage({ from: 'client', to: 'echo', act: 'request', body });
    await fs.deliver('echo', [request('one'), request('two')]);

    // Entries wait: the start wakes the actor, which handles them with no wake from outside.
    const first = counting(fs);
    const a = await startEcho(root, first.transport);
    await until('the start to replay both entries', () => a.info().cursor === 2 && a.info().value === 'idle');
    expect(first.fetches()).toBeGreaterThan(0);
    await a.stop(2_000);

    // Nothing after the cursor: the start reads nothing (a big hive's start is 10,000 of these)...
    const second = counting(fs);
    const b = await startEcho(root, second.transport);
    await new Promise((r) => setTimeout(r, 300));
    expect(second.fetches()).toBe(0);
    expect(b.info().cursor).toBe(2);
    // ...and a delivery still reaches it.
    await fs.deliver('echo', [request('three')]);
    await until('the delivery to be handled', () => b.info().cursor === 3);
    await b.stop(2_000);
    fs.close();
  });
});
