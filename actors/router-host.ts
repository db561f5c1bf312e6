/**
 * Worker entry: the router actor. Routes on outbox file events (chokidar), on direct
 * notices from senders (`kick`), and on a slow safety poll. Not exported from the package.
 */
import path from 'node:path';
import { parentPort, threadId, workerData } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { createActor, fromPromise } from 'xstate';
import { watch, type FSWatcher } from 'chokidar';
import type { RouterHostApi, WorkerEvent, WorkerInit } from './protocol.ts';
import { routerMachine } from '../machines/router.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { routeOnce } from '../src/router/route.ts';
import { hivePaths } from '../src/layout/paths.ts';
import { releaseInboxLocks } from '../src/queue/inbox.ts';
import { appendEvent } from '../src/log/event-log.ts';

const init = workerData as WorkerInit;
const settings = init.routerSettings!;
const emit = (event: WorkerEvent) => init.events.postMessage(event);
const transport = createFsTransport(init.root, { sentCap: settings.sentCap, doneCap: settings.doneCap });

const machine = routerMachine.provide({
  actors: {
    routePass: fromPromise(async () => {
      const latenciesMs: number[] = [];
      const report = await routeOnce({
        root: init.root,
        transport,
        settings: { hopCap: settings.hopCap, batchPerSender: settings.batchPerSender },
        onDelivered: (m) => latenciesMs.push(Date.now() - Date.parse(m.created_at)),
      });
      if (report.delivered.length > 0) emit({ type: 'router.delivered', deliveries: report.delivered, latenciesMs });
      if (report.rejected.length > 0) {
        emit({
          type: 'router.rejected',
          items: report.rejected.map((r) => ({ sender: r.sender, ref: r.ref, error: r.reason.error, ...(r.reason.code ? { code: r.reason.code } : {}) })),
        });
      }
      return { delivered: report.delivered.length, rejected: report.rejected.length, more: report.more };
    }),
  },
});

const actor = createActor(machine);
let lastValue = '';
actor.subscribe({
  next: (s) => {
    const value = String(s.value);
    if (value !== lastValue) {
      lastValue = value;
      emit({ type: 'router.state', value });
    }
  },
  error: (err) => {
    appendEvent(init.root, { type: 'actor.failed', agent: 'router', error: String((err as Error)?.message ?? err) });
    setImmediate(() => {
      throw err instanceof Error ? err : new Error(String(err));
    });
  },
});

let watcher: FSWatcher | null = null;
let poll: NodeJS.Timeout | null = null;

/** Only `agents/<id>/outbox/<file>` matters; everything else is ignored (inboxes change constantly). */
function ignored(agentsDir: string) {
  return (p: string) => {
    const rel = path.relative(agentsDir, p);
    if (rel === '') return false;
    const parts = rel.split(path.sep);
    if (parts.length === 1) return false;
    if (parts.length === 2) return parts[1] !== 'outbox';
    if (parts.length === 3) return parts[2]!.startsWith('.');
    return true;
  };
}

const api: RouterHostApi = {
  async start() {
    actor.start();
    if (settings.watch) {
      const agentsDir = hivePaths(init.root).agents;
      watcher = watch(agentsDir, { ignored: ignored(agentsDir), ignoreInitial: true, atomic: false, depth: 2 });
      watcher.on('add', () => actor.send({ type: 'hive.outbox.changed' }));
      watcher.on('error', (err) => appendEvent(init.root, { type: 'router.watch-error', error: String(err) }));
    }
    poll = setInterval(() => actor.send({ type: 'hive.router.poll' }), settings.pollMs);
  },
  kick() {
    actor.send({ type: 'hive.outbox.changed' });
  },
  async stop() {
    if (poll) clearInterval(poll);
    await watcher?.close();
    actor.send({ type: 'hive.stop' });
    await new Promise<void>((resolve) => {
      if (actor.getSnapshot().status !== 'active') return resolve();
      actor.subscribe({ next: (s) => s.status !== 'active' && resolve(), complete: () => resolve() });
    });
    await releaseInboxLocks();
  },
  status() {
    const s = actor.getSnapshot();
    return { value: String(s.value), passes: s.context.passes, delivered: s.context.delivered, rejected: s.context.rejected };
  },
};

Comlink.expose(api, nodeEndpoint(parentPort));
emit({ type: 'host.ready', hostId: init.hostId, threadId });
