/**
 * Worker entry: hosts one or more agent actors (one by default; pooled hosts carry
 * several). Exposes `AgentHostApi` with comlink and sends `WorkerEvent`s on the events
 * port. Not exported from the package.
 */
import { threadId, type MessagePort } from 'node:worker_threads';
import type { ActorInfo, AgentHostApi, BrainLoadFailure, HostedAgentSpec, RouterLinkMessage, WorkerEvent } from '../src/protocol/worker.ts';
import { errorMessage } from '../src/errors.ts';
import { beginWorker, crashWorker, exposeWorker } from '../src/worker/host.ts';
import { AgentActor } from '../src/agent/agent-actor.ts';
import { warmsUp, warmTurnPath } from '../src/agent/warm-up.ts';
import { openHostTransport } from '../src/queue/open-transport.ts';
import { createBrain } from '../src/brains/create.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { appendEvent, gatherEvents } from '../src/log/event-log.ts';
import { startWorkerTelemetry } from '../src/telemetry/worker.ts';
import { otelEnvFor } from '../src/telemetry/env.ts';
import { resolveSocketPath } from '../src/net/socket-path.ts';
import { HOOKS_SOCKET } from '../src/hooks/socket-name.ts';
import { agentClock } from '../src/testing/clock-skew.ts';
import { GET_MEMORY_TOOL, runGetMemory } from '../src/memory/tool.ts';
import type { ToolDescription } from '../src/brains/prompt.ts';

const host = beginWorker();
const { init } = host;
const actors = new Map<string, AgentActor>();
/** This worker's side of the message path: its agents' links, and the sends of the hive's notices. */
const transport = await openHostTransport(init.root, init.cluster, { pollMs: init.agentSettings?.inboxPollMs ?? 2_000 });
let routerPort: MessagePort | null = null;
/** This worker's own tracer provider (null: telemetry off, no SDK loaded). */
const telemetry = await startWorkerTelemetry(init.telemetry);

/**
 * Events go to the supervisor; outbox writes go straight to the router when linked, with
 * the commits behind them when the transport can tell them (the router then reads neither
 * the commit log nor the agent's files).
 */
const emit = (event: WorkerEvent) => {
  if (event.type === 'outbox.written' && routerPort) {
    const commits = transport.takeCommitHints?.(event.agent) ?? null;
    routerPort.postMessage({ type: 'kick', senders: [event.agent], ...(commits ? { commits } : {}) } satisfies RouterLinkMessage);
    return;
  }
  host.emit(event);
};

/** The agent's brain, or the reason it cannot be loaded (a configuration error). */
async function loadBrain(spec: HostedAgentSpec): Promise<Awaited<ReturnType<typeof createBrain>> | BrainLoadFailure> {
  try {
    return await createBrainFor(spec);
  } catch (err) {
    const what = spec.brain.kind === 'module' ? `brain module ${spec.brain.module}` : spec.brain.kind === 'machine' ? `machine module ${spec.brain.module}` : `${spec.brain.kind} brain`;
    const code = (err as { code?: unknown }).code;
    return { agent: spec.id, error: `${what} could not be loaded: ${errorMessage(err)}`, ...(typeof code === 'string' ? { code } : {}) };
  }
}

function createBrainFor(spec: HostedAgentSpec) {
  return createBrain(spec.brain, {
    root: init.root,
    agentId: spec.id,
    agentName: spec.name,
    agentDir: agentPaths(init.root, spec.id).dir,
    hooksSock: resolveSocketPath(init.root, HOOKS_SOCKET),
    // get_memory: described to prompt-driven brains, run here for function-calling ones.
    tools: [{ ...GET_MEMORY_TOOL, usage: 'hive memory search "QUERY" [--agent ID] [--limit N] --json   (HIVE_ROOT is set)' } as ToolDescription],
    runTool: async (name: string, args: unknown) => {
      if (name !== GET_MEMORY_TOOL.name) throw new Error(`Unknown tool ${name}`);
      return runGetMemory(init.root, args);
    },
    ...(spec.moduleUrl ? { moduleUrl: spec.moduleUrl } : {}),
    // Provider processes (command brains) export their own telemetry next to the hive's.
    ...(init.telemetry?.otlpEndpoint
      ? { extraEnv: otelEnvFor({ id: spec.id, name: spec.name }, { otlpEndpoint: init.telemetry.otlpEndpoint, serviceName: init.telemetry.serviceName }) }
      : {}),
  });
}

/** The warm-up turn, once started: a stop waits for it, so its scratch folder is removed. */
let warming: Promise<void> | null = null;

/**
 * Once per worker, after its first actors started: one scratch turn compiles the turn code
 * (src/agent/warm-up.ts), unless its test seams say otherwise (`warmsUp`).
 */
function warmOnce(): void {
  if (warming || !warmsUp(init.seams)) return;
  warming = new Promise<void>((resolve) => setImmediate(() => void warmTurnPath(init.agentSettings!).catch(() => undefined).finally(resolve)));
}

async function startOne(spec: HostedAgentSpec, brain: Awaited<ReturnType<typeof createBrain>>): Promise<ActorInfo> {
  const actor = new AgentActor({
    root: init.root,
    spec,
    brain,
    settings: init.agentSettings!,
    emit,
    onFatal: crashWorker,
    clock: agentClock(),
    tracer: telemetry?.tracer ?? null,
    transport,
  });
  actors.set(spec.id, actor);
  const info = await actor.start();
  emit({ type: 'actor.started', agent: spec.id, info, reemitted: 0 });
  appendEvent(init.root, { type: 'actor.started', agent: spec.id, restored_from: info.restoredFrom, cursor: info.cursor, thread: threadId });
  return info;
}

/** Starts the actors of `specs` one after another; brains that cannot load, and states that no longer fit them, are reported as failed. */
async function startEach(specs: HostedAgentSpec[]): Promise<{ started: ActorInfo[]; failed: BrainLoadFailure[] }> {
  const started: ActorInfo[] = [];
  const failed: BrainLoadFailure[] = [];
  for (const spec of specs) {
    const brain = await loadBrain(spec);
    if ('error' in brain && 'agent' in brain) {
      failed.push(brain);
      continue;
    }
    try {
      started.push(await startOne(spec, brain));
    } catch (err) {
      // Its committed state does not fit its brain any more (a machine changed under it):
      // a configuration matter, reported as one; nothing of the state is touched.
      if ((err as { code?: string }).code !== 'E_BAD_SNAPSHOT') throw err;
      actors.delete(spec.id);
      await brain.close?.();
      failed.push({ agent: spec.id, error: errorMessage(err) });
    }
  }
  return { started, failed };
}

const api: AgentHostApi = {
  async startActors(specs) {
    // Their log lines (actor.restored, actor.started) go out as one append at the end.
    const result = await gatherEvents(init.root, () => startEach(specs));
    warmOnce();
    return result;
  },
  wake(ids) {
    transport.notify(ids);
  },
  attachRouter(port) {
    // A router replaced (not the first of this host): the one before it may have died
    // between a flush and its wake. Its actors look at once; at a start they read their
    // inboxes as they start.
    if (routerPort) setImmediate(() => transport.lookAll?.());
    routerPort?.close();
    routerPort = port;
    port.on('message', (m: RouterLinkMessage) => {
      if (m.type !== 'wake') return;
      if (!m.deliveries || !transport.offerDeliveries) return transport.notify(m.agents);
      transport.offerDeliveries(m.deliveries); // wakes those agents
      const told = new Set(m.deliveries.map((d) => d.agent));
      transport.notify(m.agents.filter((a) => !told.has(a)));
    });
    port.unref();
  },
  async stopActor(id, graceMs) {
    const actor = actors.get(id);
    if (!actor) return true;
    const ok = await actor.stop(graceMs);
    actors.delete(id);
    return ok;
  },
  async stopAll(graceMs) {
    await Promise.all([...actors.values()].map((a) => a.stop(graceMs)));
    if (warming) await Promise.race([warming, new Promise((r) => setTimeout(r, Math.min(graceMs, 2_000)))]);
    await telemetry?.forceFlush().catch(() => undefined);
  },
  status() {
    return [...actors.values()].map((a) => a.info());
  },
};

exposeWorker(host, api);
