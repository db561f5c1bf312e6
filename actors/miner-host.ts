/**
 * Worker entry: the miner actor. Keeps every agent's memory searchable in `palace/`
 * (see `src/memory/mine.ts`); its batch work runs on the shared piscina pool, reached
 * through the port `attachJobs` hands over. Not exported from the package.
 */
import fs from 'node:fs';
import { parentPort, threadId, workerData, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { createActor, fromPromise } from 'xstate';
import type { MinerHostApi, WorkerEvent, WorkerInit } from '../src/protocol/worker.ts';
import { minerMachine, type Growth } from '../machines/miner.ts';
import { connectJobs, inlineJobs, type MemoryJobs } from '../src/memory/jobs.ts';
import { runMinePass, type MinePassResult } from '../src/memory/mine.ts';
import { mineSettingsOf } from '../src/memory/settings.ts';
import { readManifest } from '../src/memory/palace.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { listDir } from '../src/fs/atomic.ts';
import { isAgentId } from '../src/protocol/agent-id.ts';
import { appendEvent } from '../src/log/event-log.ts';
import { adoptModesOf } from '../src/fs/modes.ts';
import { installSeams } from '../src/testing/seams.ts';

const init = workerData as WorkerInit;
// What this thread creates in the hive takes the root's sharing (src/fs/modes.ts).
adoptModesOf(init.root);
if (init.seams) installSeams(init.seams, init.root);
const { memory, configDir } = init.memorySettings!;
const emit = (event: WorkerEvent) => init.events.postMessage(event);
let jobs: MemoryJobs = inlineJobs();
let lastResult: MinePassResult | null = null;

const settings = mineSettingsOf(memory, configDir);

/** |memory.md size − the size last mined|, for the given agents (all when omitted). */
function growth(only?: string[]): Growth[] {
  const wings = readManifest(init.root)?.wings ?? {};
  const agents = only ?? listDir(hivePaths(init.root).agents).filter(isAgentId);
  const out: Growth[] = [];
  for (const agent of agents) {
    let size: number;
    try {
      size = fs.statSync(agentPaths(init.root, agent).memory).size;
    } catch {
      continue;
    }
    out.push({ agent, bytes: Math.abs(size - (wings[agent]?.files['memory.md']?.[1] ?? 0)) });
  }
  return out;
}

const machine = minerMachine.provide({
  actors: {
    minePass: fromPromise(async ({ input }) => {
      const r = await runMinePass(init.root, settings, jobs, { force: input.force });
      lastResult = r;
      if (r.mined.length > 0 || r.removed.length > 0 || r.snapshot) emit({ type: 'memory.mined', result: r });
      return { mined: r.mined, documents: r.documents, ms: r.ms };
    }),
    checkGrowth: fromPromise(async () => growth()),
  },
});

const actor = createActor(machine, {
  input: { settings: { mineEveryMs: memory.mineEveryMs, checkEveryMs: memory.checkEveryMs, growBytes: memory.growBytes } },
});

/** On-demand callers wait until `passes` reaches their mark. */
const waiters: { mark: number; resolve: (v: Awaited<ReturnType<MinerHostApi['mine']>>) => void }[] = [];
let lastValue = '';
actor.subscribe({
  next: (s) => {
    const value = String(s.value);
    if (value !== lastValue) {
      lastValue = value;
      emit({ type: 'memory.state', actor: 'miner', value });
    }
    for (const w of waiters.splice(0)) {
      if (s.context.passes >= w.mark) w.resolve({ result: s.context.lastError ? null : lastResult, error: s.context.lastError });
      else waiters.push(w);
    }
  },
  error: (err) => {
    appendEvent(init.root, { type: 'actor.failed', agent: 'miner', error: String((err as Error)?.message ?? err) });
    setImmediate(() => {
      throw err instanceof Error ? err : new Error(String(err));
    });
  },
});

const api: MinerHostApi = {
  attachJobs(port: MessagePort) {
    jobs = connectJobs(port);
  },
  async start() {
    actor.start();
  },
  mine(force) {
    return new Promise((resolve) => {
      waiters.push({ mark: actor.getSnapshot().context.started + 1, resolve });
      actor.send({ type: 'hive.memory.mine', force });
    });
  },
  notify(agent) {
    for (const g of growth([agent])) actor.send({ type: 'hive.memory.grew', agent: g.agent, bytes: g.bytes });
  },
  async stop() {
    actor.send({ type: 'hive.stop' });
    await new Promise<void>((resolve) => {
      if (actor.getSnapshot().status !== 'active') return resolve();
      actor.subscribe({ next: (s) => s.status !== 'active' && resolve(), complete: () => resolve() });
    });
    for (const w of waiters.splice(0)) w.resolve({ result: null, error: 'the miner stopped' });
  },
  status() {
    const s = actor.getSnapshot();
    return { value: String(s.value), passes: s.context.passes, lastMineAt: s.context.lastMineAt, lastError: s.context.lastError };
  },
};

Comlink.expose(api, nodeEndpoint(parentPort));
emit({ type: 'host.ready', hostId: init.hostId, threadId });
