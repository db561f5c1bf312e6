import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { listInbox } from '../src/queue/inbox.ts';

const AGENTS = Array.from({ length: 120 }, (_, i) => `echo-${i}`);

describe('outbox files around a start', () => {
  /**
   * The router's first pass reads every outbox in slices of 32 and its watcher reports only
   * what lands after it started (the outboxes already there are the sweep's): a file in any
   * outbox, written before the start or just after it, is routed without the safety poll
   * (set to ten minutes here, so a file nobody saw would stay put).
   */
  it('every file written before the start into outboxes the watcher never reports, or right after it into others, is routed without the safety poll', async () => {
    const config = fastConfig({
      agents: [...AGENTS.map((id) => ({ id, brain: { kind: 'echo' as const } })), { id: 'client', brain: { kind: 'external' as const } }],
      router: { pollMs: 600_000 },
      supervisor: { agentsPerWorker: 60 } as never,
    });
    const root = config.root!;
    await ensureHive(root);
    for (const id of [...AGENTS, 'client']) await ensureAgent(root, { id, brain: id === 'client' ? { kind: 'external' } : { kind: 'echo' } });
    const note = (from: string, tag: string) => createMessage({ from, to: 'client', act: 'inform', body: `${tag} from ${from}` });
    for (const id of AGENTS.slice(0, 60)) writeOutbox(root, [note(id, 'before')]);
    const hive = await startHive(config);
    // Other agents' outboxes: an event for an outbox would have its older file read too.
    for (const id of AGENTS.slice(60)) writeOutbox(root, [note(id, 'after')]);
    const arrived = () => listInbox(root, 'client').filter((e) => e.message?.act === 'inform').length;
    await waitFor(hive, () => arrived() === 120, 'all 120 notes in the client inbox', 20_000);
    expect(arrived()).toBe(120);
  }, 60_000);
});
