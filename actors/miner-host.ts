/**
 * Worker entry: the miner actor. Keeps every agent's memory searchable in `palace/`
 * (see `src/memory/mine.ts`); its batch work runs on the shared piscina pool, reached
 * through the port `attachJobs` hands over. Not exported from the package.
 */
import fs from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import { createActor, fromPromise } from 'xstate';
import type { MinerHostApi } from '../src/protocol/worker.ts';
import { beginWorker, exposeWorker, untilStopped, watchActor } from '../src/worker/host.ts';
import { minerMachine, type Growth } from '../machines/miner.ts';
import { connectJobs, inlineJobs, type MemoryJobs } from '../src/memory/jobs.ts';
import { runMinePass, type MinePassResult } from '../src/memory/mine.ts';
import { mineSettingsOf } from '../src/memory/settings.ts';
import { readManifest } from '../src/memory/palace.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { listDir } from '../src/fs/atomic.ts';
import { isAgentId } from '../src/protocol/agent-id.ts';

const host = beginWorker();
const { init, emit } = host;
const { memory, configDir } = init.memorySettings!;
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
watchActor(actor, init.root, 'miner', (value) => emit({ type: 'memory.state', actor: 'miner', value }));
actor.subscribe({
  next: (s) => {
    for (const w of waiters.splice(0)) {
      if (s.context.passes >= w.mark) w.resolve({ result: s.context.lastError ? null : lastResult, error: s.context.lastError });
      else waiters.push(w);
    }
  },
  error: () => undefined, // watchActor logs it and crashes the worker
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
    await untilStopped(actor);
    for (const w of waiters.splice(0)) w.resolve({ result: null, error: 'the miner stopped' });
  },
  status() {
    const s = actor.getSnapshot();
    return { value: String(s.value), passes: s.context.passes, lastMineAt: s.context.lastMineAt, lastError: s.context.lastError };
  },
};

exposeWorker(host, api);
