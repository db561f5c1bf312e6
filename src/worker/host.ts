/**
 * The skeleton every worker entry in actors/ shares (docs/architecture.md, "Workers"): the
 * thread takes its init data and the hive's file modes, installs its test seams, emits
 * `WorkerEvent`s on the events port, exposes its API with comlink and then says
 * `host.ready` (the handshake the main thread waits for), runs an XState actor whose state
 * changes it reports, and lets the thread crash on an error so the supervisor restarts it.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { AnyActorRef } from 'xstate';
import type { WorkerEvent, WorkerInit } from '../protocol/worker.ts';
import { adoptModesOf } from '../fs/modes.ts';
import { installSeams } from '../testing/seams.ts';
import { appendEvent } from '../log/event-log.ts';
import { openFiles } from '../fs/open-files.ts';

export interface WorkerHost {
  readonly init: WorkerInit;
  /** One event to the main thread. */
  emit(event: WorkerEvent): void;
}

/** Begins a worker thread: its init data, the root's file modes, its test seams. */
export function beginWorker(): WorkerHost {
  const init = workerData as WorkerInit;
  // What this thread creates in the hive takes the root's sharing (src/fs/modes.ts).
  adoptModesOf(init.root);
  if (init.seams) installSeams(init.seams, init.root);
  if (init.openFiles) openFiles.setCap(init.openFiles);
  return { init, emit: (event) => init.events.postMessage(event) };
}

/** Exposes the worker's API to the main thread, then completes the handshake. */
export function exposeWorker(host: WorkerHost, api: object): void {
  Comlink.expose(api, nodeEndpoint(parentPort));
  host.emit({ type: 'host.ready', hostId: host.init.hostId, threadId });
}

/** Let it crash: rethrows outside any promise chain, so the worker dies with this error. */
export function crashWorker(error: unknown): void {
  setImmediate(() => {
    throw error instanceof Error ? error : new Error(String(error));
  });
}

/**
 * Watches the worker's actor: each change of its state value goes to `onValue`; an error
 * is logged as `actor.failed` for `name` and crashes the worker.
 */
export function watchActor(actor: AnyActorRef, root: string, name: string, onValue: (value: string) => void): void {
  let last = '';
  actor.subscribe({
    next: (s: { value: unknown }) => {
      const value = String(s.value);
      if (value === last) return;
      last = value;
      onValue(value);
    },
    error: (err: unknown) => {
      appendEvent(root, { type: 'actor.failed', agent: name, error: String((err as Error)?.message ?? err) });
      crashWorker(err);
    },
  });
}

/** Resolves once the actor is no longer active (it reached a final state or stopped). */
export function untilStopped(actor: AnyActorRef): Promise<void> {
  return new Promise<void>((resolve) => {
    if (actor.getSnapshot().status !== 'active') return resolve();
    actor.subscribe({ next: (s: { status: string }) => s.status !== 'active' && resolve(), complete: () => resolve() });
  });
}
