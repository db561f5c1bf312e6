import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, tempRoot } from './helpers/temp.ts';
import { DiskRecorder } from './helpers/power-loss/recorder.ts';
import { crashState, seededRandom, type Policy } from './helpers/power-loss/crash-states.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { DEFAULT_ROUTER_SETTINGS, routeOnce } from '../src/router/route.ts';
import { readDirectory } from '../src/router/directory.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { listInbox, readInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { sweepOrphans } from '../src/supervisor/startup.ts';
import { AgentActor } from '../src/agent/agent-actor.ts';
import { createEchoBrain } from '../src/brains/echo.ts';
import { DEFAULT_SESSION_CAPS } from '../src/session/types.ts';
import type { AgentSettings } from '../src/protocol/worker.ts';

/**
 * Power loss on the message path. A workload (a client's requests, the router, an echo
 * agent and its replies) runs in this thread while every write, rename, link and flush it
 * makes under the hive is recorded. Then, for every prefix of that trace, the states a
 * power cut could leave (see helpers/power-loss/crash-states.ts) are written out, the
 * hive recovers from each (agent restored, router and agent run until quiet), and each
 * request the client was told was durable must have exactly one reply, handled once.
 *
 * A SIGKILL never loses the page cache, so the kill tests cannot see a missing flush;
 * this test can: with the fsyncs turned into no-ops it fails (checked once when it was
 * written, and again with only the outbox folder's fsync removed).
 */

const SETTINGS: AgentSettings = {
  turnBatch: 8,
  brainRetries: 0,
  sessionCaps: DEFAULT_SESSION_CAPS,
  poisonAfter: 3,
  doneCap: 5_000,
  inboxPollMs: 60_000,
  gapWaitMs: 50,
};

/** The hive's two moving parts, in this thread: routing passes and the echo agent. */
class MiniHive {
  private readonly transport;
  private actor: AgentActor | null = null;
  private processed = 0;

  constructor(readonly root: string) {
    this.transport = createFsTransport(root);
  }

  async start(): Promise<void> {
    sweepOrphans(this.root); // what a supervisor does first at start
    this.actor = new AgentActor({
      root: this.root,
      spec: { id: 'echo', name: 'echo', role: 'agent', brain: { kind: 'echo' } },
      brain: createEchoBrain(),
      settings: SETTINGS,
      emit: (e) => {
        if (e.type === 'actor.processed') this.processed += 1;
      },
      onFatal: (err) => {
        throw err;
      },
    });
    await this.actor.start();
  }

  async route(): Promise<number> {
    const report = await routeOnce({ root: this.root, transport: this.transport, directory: readDirectory(this.root), settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    if (report.shortage) throw report.shortage;
    if (report.delivered.some((d) => d.agent === 'echo')) this.actor?.wake();
    return report.delivered.length + report.rejected.length;
  }

  /** Routes and lets the agent work until nothing moves any more. */
  async settle(): Promise<void> {
    for (let quiet = 0, rounds = 0; quiet < 2; rounds++) {
      if (rounds > 200) throw new Error('the hive did not settle');
      const before = this.processed;
      const moved = await this.route();
      await this.idle();
      quiet = moved === 0 && this.processed === before ? quiet + 1 : 0;
    }
  }

  /** Waits until the agent is idle with nothing after its cursor. */
  async idle(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const info = this.actor!.info();
      const waiting = readInbox(this.root, 'echo', info.cursor).entries.length;
      if (info.value === 'idle' && waiting === 0) return;
      if (Date.now() > deadline) throw new Error(`echo did not become idle (state ${info.value}, ${waiting} waiting)`);
      this.actor!.wake();
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    await this.actor?.stop(2_000);
    this.transport.close();
  }
}

async function newHive(): Promise<string> {
  const root = tempRoot();
  await ensureHive(root);
  await ensureAgent(root, { id: 'client', brain: { kind: 'external' } });
  await ensureAgent(root, { id: 'echo', brain: { kind: 'echo' } });
  return root;
}

/** Client → echo requests, acknowledged (recorded) once writeOutbox returns. */
function request(root: string, recorder: DiskRecorder, bodies: string[]): HiveMessage[] {
  const batch = bodies.map((body) => createMessage({ from: 'client', to: 'echo', act: 'request', body }));
  writeOutbox(root, batch);
  recorder.ack(batch.map((m) => m.id));
  return batch;
}

/** What must hold after recovery: every acknowledged request answered exactly once, none handled twice. */
function problemsAfterRecovery(root: string, acked: Set<string>): string[] {
  const problems: string[] = [];
  const replies = new Map<string, number>();
  for (const e of listInbox(root, 'client')) {
    const m = e.message;
    if (m?.in_reply_to) replies.set(m.in_reply_to, (replies.get(m.in_reply_to) ?? 0) + 1);
  }
  for (const id of acked) if (replies.get(id) !== 1) problems.push(`acknowledged request ${id} has ${replies.get(id) ?? 0} replies`);
  for (const [id, n] of replies) if (n > 1) problems.push(`request ${id} has ${n} replies`);
  const delivered = listInbox(root, 'echo').map((e) => e.id);
  if (new Set(delivered).size !== delivered.length) problems.push(`echo's inbox holds an id twice: ${delivered.join(', ')}`);
  const echoed = (readStateFile(root, 'echo')?.snapshot.context.brainState as { echoed?: number } | null)?.echoed ?? 0;
  if (echoed !== new Set(delivered).size) problems.push(`echo handled ${echoed} requests, ${new Set(delivered).size} were delivered to it`);
  return problems;
}

describe('power loss on the message path', () => {
  it('every state a power cut can leave, at every point of a workload, recovers each acknowledged message exactly once', async () => {
    const root = await newHive();
    const recorder = new DiskRecorder(root);
    const baseline = recorder.start();
    try {
      const hive = new MiniHive(root);
      await hive.start();
      request(root, recorder, ['one', 'two']);
      await hive.settle();
      request(root, recorder, ['three']);
      await hive.route();
      request(root, recorder, ['four', 'five']);
      await hive.settle();
      await hive.stop();
    } finally {
      recorder.stop();
    }
    const ops = recorder.ops;
    const counts = { data: 0, sync: 0, link: 0, unlink: 0, dirsync: 0, ack: 0 };
    for (const o of ops) counts[o.op] += 1;
    expect(counts.ack).toBe(3);
    expect(counts.sync).toBeGreaterThan(0);
    expect(counts.dirsync).toBeGreaterThan(0);

    const seed = 20_261_201;
    const rnd = seededRandom(seed);
    const seen = new Set<string>();
    const failures: string[] = [];
    let checked = 0;
    const work = tempDir('hive-power-');
    for (let k = 0; k <= ops.length; k++) {
      const policies: Policy[] = ['keep', 'drop', 'random', 'random'];
      for (const policy of policies) {
        const state = crashState(baseline, ops, k, policy, rnd);
        // The same disk with more acknowledged ids is a different check.
        const key = `${state.key}\n${[...state.acked].sort().join(',')}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const dir = path.join(work, `s${checked}`, 'hive');
        state.materialize(dir);
        const hive = new MiniHive(dir);
        try {
          await hive.start();
          await hive.settle();
          const problems = problemsAfterRecovery(dir, state.acked);
          if (problems.length > 0) failures.push(`cut after op ${k} (${policy}): ${problems.join('; ')}`);
        } catch (err) {
          failures.push(`cut after op ${k} (${policy}): recovery failed: ${(err as Error).message}`);
        } finally {
          await hive.stop().catch(() => undefined);
        }
        fs.rmSync(path.dirname(dir), { recursive: true, force: true });
        checked += 1;
      }
    }
    process.stdout.write(`power loss: ${ops.length} recorded ops (${JSON.stringify(counts)}), ${checked} distinct crash states checked, seed ${seed}\n`);
    expect(failures.slice(0, 10)).toEqual([]);
    expect(checked).toBeGreaterThan(ops.length);
  }, 300_000);
});
