import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { HiveError, errorMessage } from '../errors.ts';
import { GOD_ID } from '../protocol/agent-id.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { appendEvent } from '../log/event-log.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { packageRoot } from '../package-files.ts';
import { machineGraph } from '../inspector/machine-graph.ts';
import type { Brain, BrainOutput, BrainTurn, JsonValue, TimerRequest } from './types.ts';
import { LiveMachine, TIMER_PREFIX, describeMachineState, isMachineState, type MachineBrainState, type XStateRuntime } from './machine-runtime.ts';

/** What the machine brain needs besides its module (the agent's provider and get_memory). */
export interface MachineBrainEnv {
  root: string;
  agentId: string;
  agentDir: string;
  /** The agent's provider (`brain.provider`), for `hiveThink`. */
  provider?: Brain;
  runMemory: (args: unknown) => Promise<unknown>;
}

export interface MachineBrainOptions {
  /** The module's file (its xstate is loaded from its folder). */
  module: string;
  /** The importable URL of the module (compiled by the supervisor). */
  url: string;
  exportName?: string;
  /** Given to the machine as its `input` on its first start. */
  options?: Record<string, unknown>;
  /** Bound on the invocations of one turn (ms). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** The file beside an agent's folder that holds its machine's graph (the inspector and `hive diagram` draw it). */
export function machineGraphFile(agentDir: string): string {
  return path.join(agentDir, 'machine.json');
}

/**
 * The xstate the user's module was built with: resolved from the module's folder (their
 * project's copy; with xstate a peer dependency of Hive it is the one both share), else
 * from Hive's own. Required, not imported: xstate's ESM entry for Node re-exports its
 * CommonJS build, so both ways reach the same module instance.
 */
export function xstateFileFor(moduleFile: string): string {
  for (const from of [moduleFile, path.join(packageRoot(), 'package.json')]) {
    try {
      return createRequire(from).resolve('xstate');
    } catch {
      // next
    }
  }
  throw new HiveError('E_BAD_CONFIG', `Cannot find xstate from ${moduleFile}: install it in your project (npm install xstate@^5.19)`);
}

function isMachine(v: unknown): v is { id: string; provide: (i: unknown) => unknown; root: unknown; config: unknown } {
  const m = v as { provide?: unknown; root?: unknown; transition?: unknown; getInitialSnapshot?: unknown } | null;
  return !!m && typeof m.provide === 'function' && typeof m.transition === 'function' && typeof m.getInitialSnapshot === 'function' && m.root !== undefined;
}

/** The event a delivered message becomes (see `hive-runtime/machine`). */
export function eventOf(message: HiveMessage, seq: number): { type: string; message: HiveMessage; seq: number } {
  const answer = message.from === GOD_ID && message.in_reply_to !== null;
  return { type: answer ? 'hive.answer' : `hive.${message.act}`, message, seq };
}

/**
 * A brain that runs the user's XState machine (brain kind `machine`): each message is an
 * event, each emitted `hive.send` a message, the persisted snapshot and its delayed events
 * the brain state committed with the cursor.
 */
export async function createMachineBrain(o: MachineBrainOptions, env: MachineBrainEnv): Promise<Brain> {
  const exportName = o.exportName ?? 'default';
  const label = `Agent "${env.agentId}" (machine ${path.basename(o.module)})`;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(o.url.startsWith('file:') ? o.url : pathToFileURL(o.url).href)) as Record<string, unknown>;
  } catch (err) {
    throw new HiveError('E_BAD_CONFIG', `Cannot load machine module ${o.module}: ${errorMessage(err)}`, { cause: err });
  }
  const exported = mod[exportName];
  if (!isMachine(exported)) {
    const found = exported === undefined ? 'nothing' : typeof exported === 'function' ? 'a function' : typeof exported;
    throw new HiveError('E_BAD_CONFIG', `Machine module ${o.module} exports no XState machine as "${exportName}" (found ${found}): export setup({ ... }).createMachine({ ... })`);
  }
  const xs = createRequire(o.module)(xstateFileFor(o.module)) as XStateRuntime;
  const provided = exported.provide({
    actors: {
      hiveThink: xs.fromPromise(async ({ input }: { input: never }) => {
        const prompt = (input as { prompt?: unknown } | undefined)?.prompt;
        if (typeof prompt !== 'string') throw new HiveError('E_BAD_ARGS', `${label}: hiveThink needs input { prompt: string }`);
        if (!env.provider?.complete) throw new HiveError('E_BAD_CONFIG', `${label}: hiveThink needs brain.provider (a command or openai brain) in the config`);
        return { text: await env.provider.complete(prompt) };
      }),
      hiveMemory: xs.fromPromise(async ({ input }: { input: never }) => env.runMemory(input)),
    },
  });
  try {
    fs.mkdirSync(env.agentDir, { recursive: true });
    writeFileAtomic(machineGraphFile(env.agentDir), `${JSON.stringify({ module: o.module, export: exportName, graph: machineGraph(exported as never) })}\n`, { durable: false });
  } catch (err) {
    appendEvent(env.root, { type: 'machine.graph-failed', agent: env.agentId, error: errorMessage(err) });
  }

  let live: LiveMachine | null = null;
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  /** The live machine for a committed state: the one that produced it, or one restored from it. */
  const machineFor = (state: JsonValue, now: number): LiveMachine => {
    const persisted = isMachineState(state) ? (state as MachineBrainState) : null;
    if (live && live.rev === (persisted?.rev ?? 0)) return live;
    live?.stop();
    live = null;
    live = new LiveMachine(xs, provided, label, persisted, now, o.options);
    return live;
  };

  return {
    kind: 'machine',
    async restore(state, now) {
      // Delays the machine armed as it started (an `after` on its first state) that no commit
      // holds yet: the agent arms timers for them now; the next commit keeps them.
      const m = machineFor(state, now);
      const armed: TimerRequest[] = [];
      for (const [name, at] of m.pendingTimers()) {
        if (m.committed.has(name)) continue;
        armed.push({ name, delayMs: Math.max(0, at - now) });
        m.committed.set(name, at);
      }
      return armed;
    },
    describe(state) {
      if (isMachineState(state)) return describeMachineState(state as MachineBrainState);
      // Nothing committed yet: the machine as it started.
      return live ? describeMachineState({ machine: 1, rev: 0, snapshot: JSON.parse(JSON.stringify(live.actor.getPersistedSnapshot())) as JsonValue, delays: [], recent: [] }) : null;
    },
    async handle(turn: BrainTurn): Promise<BrainOutput> {
      const m = machineFor(turn.state, turn.now);
      const before = new Map(m.committed);
      let fired: string | null = null;
      try {
        if (turn.input.kind === 'timer') {
          fired = turn.input.timer.name;
          const r = fired.startsWith(TIMER_PREFIX) ? m.fire(fired, turn.now) : 'gone';
          if (r !== 'fired') {
            const why = r === 'ignored' ? 'the machine has no transition for it in this state (changed since it was armed?)' : 'no such delay is pending';
            appendEvent(env.root, { type: 'machine.timer-ignored', agent: env.agentId, module: o.module, timer: fired, state: m.value(), reason: why });
          }
        } else {
          const event = eventOf(turn.input.message, turn.input.seq);
          const r = m.deliver(event, turn.now);
          if (r.ignored) appendEvent(env.root, { type: 'machine.ignored', agent: env.agentId, module: o.module, event: event.type, id: turn.input.message.id, state: r.state });
        }
        await m.settle(timeoutMs);
        const out = m.outcome(before, fired);
        return { messages: out.drafts, state: out.state as unknown as JsonValue, schedule: out.schedule, cancel: out.cancel };
      } catch (err) {
        // Whatever ran of this turn is thrown away: a retry restores from the committed state.
        live?.stop();
        live = null;
        throw err;
      }
    },
    async close() {
      live?.stop();
      live = null;
      await env.provider?.close?.();
    },
  };
}
