/**
 * Worker entry: the reflector actor. Finds oversized memories and condenses them one at
 * a time (see `src/memory/reflect.ts` for the crash-safe swap); the condensing itself
 * runs on the shared piscina pool. Not exported from the package.
 */
import fs from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import { createActor, fromPromise } from 'xstate';
import type { ReflectorHostApi } from '../src/protocol/worker.ts';
import { beginWorker, exposeWorker, untilStopped, watchActor } from '../src/worker/host.ts';
import { reflectorMachine } from '../machines/reflector.ts';
import { connectJobs, inlineJobs, type MemoryJobs } from '../src/memory/jobs.ts';
import { condenseAgentMemory, type ReflectResult } from '../src/memory/reflect.ts';
import { countEntries, needsCondense } from '../src/memory/policy.ts';
import { condenseSettingsOf, resolveSummarizer } from '../src/memory/settings.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { listDir } from '../src/fs/atomic.ts';
import { isAgentId } from '../src/protocol/agent-id.ts';
import { ensureProviderSummarizers } from '../src/brains/summarizers.ts';
import { readRegularFile } from '../src/fs/regular-file.ts';

const host = beginWorker();
const { init, emit } = host;
ensureProviderSummarizers();
const { memory, configDir } = init.memorySettings!;
let jobs: MemoryJobs = inlineJobs();

/**
 * The size of each memory at its last verdict: a memory is read (to count entries) only
 * when its size moved, and one that could not be condensed is not tried again until it
 * changes (no condense loop on a file made of pinned entries).
 */
const verdicts = new Map<string, { size: number; oversized: boolean }>();

function oversized(agent: string, force: boolean): boolean {
  let size: number;
  try {
    size = fs.statSync(agentPaths(init.root, agent).memory).size;
  } catch {
    return false;
  }
  if (force) return true;
  const known = verdicts.get(agent);
  if (known?.size === size) return false;
  if (size < memory.condense.minBytes) return false;
  const text = readRegularFile(agentPaths(init.root, agent).memory, 'utf8');
  const verdict = needsCondense(Buffer.byteLength(text), countEntries(text), memory.condense);
  verdicts.set(agent, { size, oversized: verdict });
  return verdict;
}

const waiters = new Map<string, ((r: ReflectResult) => void)[]>();

const machine = reflectorMachine.provide({
  actors: {
    scan: fromPromise(async () => listDir(hivePaths(init.root).agents).filter((a) => isAgentId(a) && oversized(a, false))),
    condense: fromPromise(async ({ input }) => {
      let result: ReflectResult;
      if (!input.force && verdicts.get(input.agent)?.oversized !== true && !oversized(input.agent, false)) {
        result = { agent: input.agent, status: 'skipped', reason: 'not over the thresholds' };
      } else {
        result = await condenseAgentMemory(init.root, input.agent, {
          settings: condenseSettingsOf(memory),
          summarizer: resolveSummarizer(init.root, input.agent, memory, configDir),
          jobs,
        });
        // Remember the size we ended with: unchanged files are not tried again.
        try {
          verdicts.set(input.agent, { size: fs.statSync(agentPaths(init.root, input.agent).memory).size, oversized: false });
        } catch {
          verdicts.delete(input.agent);
        }
      }
      emit({ type: 'memory.condensed', result });
      for (const w of waiters.get(input.agent) ?? []) w(result);
      waiters.delete(input.agent);
      return { agent: result.agent, status: result.status };
    }),
  },
});

const actor = createActor(machine, { input: { settings: { checkEveryMs: memory.condense.checkEveryMs } } });
watchActor(actor, init.root, 'reflector', (value) => emit({ type: 'memory.state', actor: 'reflector', value }));

const api: ReflectorHostApi = {
  attachJobs(port: MessagePort) {
    jobs = connectJobs(port);
  },
  async start() {
    actor.start();
  },
  condense(agent, force) {
    return new Promise((resolve) => {
      waiters.set(agent, [...(waiters.get(agent) ?? []), resolve]);
      actor.send({ type: 'hive.memory.condense', agent, force });
    });
  },
  notify(agent) {
    if (oversized(agent, false)) actor.send({ type: 'hive.memory.condense', agent, force: false });
  },
  async stop() {
    actor.send({ type: 'hive.stop' });
    await untilStopped(actor);
    for (const [agent, list] of waiters) for (const w of list) w({ agent, status: 'skipped', reason: 'the reflector stopped' });
    waiters.clear();
  },
  status() {
    const s = actor.getSnapshot();
    return { value: String(s.value), condensed: s.context.condensed, aborted: s.context.aborted, queued: s.context.queue.length };
  },
};

exposeWorker(host, api);
