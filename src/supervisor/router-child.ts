import { clusterInitOf } from './cluster.ts';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import type { AgentHostApi, MainToRouterMessage, RouterHostApi, RouterToMainMessage, WorkerEvent } from '../protocol/worker.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { appendEvent } from '../log/event-log.ts';
import { errorMessage } from '../errors.ts';
import type { HostChild } from './host-child.ts';
import { WorkerHandle } from './worker-handle.ts';
import { drainWithin } from './drain.ts';
import { flushBudgetMs, openFilesInitOf, type SupervisorContext } from './context.ts';
import { superviseWorker } from './supervise.ts';
import { runtimeActorRow, type ActorStatus } from './status.ts';

export const ROUTER_HOST = 'router';

/** An agent host the router links to: its id, its live thread (if any) and its agents. */
export interface LinkableHost {
  id: string;
  handle: WorkerHandle<AgentHostApi> | null;
  agents: string[];
}

/**
 * The router as the supervisor runs it: a supervised worker, linked to every agent host
 * by a channel of its own so wake-ups and kicks do not pass through the main thread.
 */
export class RouterChild {
  private child: HostChild<RouterHostApi> | null = null;
  private handle: WorkerHandle<RouterHostApi> | null = null;
  /** The router machine's state, as it last reported it. */
  private value = 'starting';
  /** The shortage the router waits out, or null. */
  private paused: string | null = null;

  /** The channel to the router's thread while it runs (kicks and hive.send()'s messages). */
  private port: MessagePort | null = null;
  /** Sends posted to the router and not acknowledged yet, by tag. */
  private readonly outstanding = new Map<number, { message: HiveMessage; resolve: () => void; reject: (err: unknown) => void }>();
  private nextTag = 1;
  private toPost: { tag: number; message: HiveMessage }[] = [];

  /**
   * `writeDurably`: how a send is made durable without the router (the send log): while no
   * router runs, for what it did not acknowledge before its thread ended, and for a sender
   * it refused.
   */
  constructor(
    private readonly ctx: SupervisorContext,
    private readonly onEvent: (e: WorkerEvent) => void,
    private readonly hosts: () => LinkableHost[],
    private readonly writeDurably: (message: HiveMessage) => Promise<void>,
  ) {}

  /** A router worker, booted but not routing (`start()` begins that). */
  boot(): Promise<WorkerHandle<RouterHostApi>> {
    const r = this.ctx.config.router;
    const telemetry = this.ctx.observer()?.workerTelemetry(ROUTER_HOST, []);
    return WorkerHandle.start<RouterHostApi>(
      'router-host',
      {
        hostId: ROUTER_HOST,
        root: this.ctx.root,
        routerSettings: { pollMs: r.pollMs, hopCap: r.hopCap, batchPerSender: r.batchPerSender, sentCap: r.sentCap, doneCap: this.ctx.config.supervisor.doneCap, watch: true },
        ...(telemetry ? { telemetry } : {}),
        ...clusterInitOf(this.ctx.config),
        ...openFilesInitOf(this.ctx.config, 'router'),
        ...this.ctx.testingInit(),
      },
      this.onEvent,
    );
  }

  /**
   * Starts routing. `booted`: a router worker started earlier (while the agents were
   * restored), used for the first start; restarts boot their own.
   */
  async start(booted: Promise<WorkerHandle<RouterHostApi>> | null): Promise<void> {
    let first = booted;
    this.child = superviseWorker<RouterHostApi>(this.ctx, ROUTER_HOST, {
      start: async () => {
        const pending = first;
        first = null;
        const handle = await (pending ?? this.boot());
        try {
          await handle.call((api) => api.start());
        } catch (err) {
          await handle.terminate();
          throw err;
        }
        this.handle = handle;
        await this.linkMain(handle);
        await Promise.all(this.hosts().map((h) => (h.handle ? this.link(h.id, h.handle, h.agents) : undefined)));
        return handle;
      },
      drain: async (handle) => {
        await drainWithin(handle.call((api) => api.stop()), 5_000 + flushBudgetMs(this.ctx));
      },
      onRestarted: () => {
        this.paused = null; // a new thread: nothing waits yet
      },
    });
    await this.child.start();
  }

  async stop(): Promise<void> {
    await this.child?.stop();
    this.unlinkMain(this.port);
    await Promise.allSettled(this.writing);
  }

  /** The main thread's own channel to a (re)started router. */
  private async linkMain(router: WorkerHandle<RouterHostApi>): Promise<void> {
    const { port1, port2 } = new MessageChannel();
    await router.call(async (api) => api.attachMain(Comlink.transfer(port1, [port1])));
    port2.on('message', (m: RouterToMainMessage) => {
      for (const tag of m.tags) {
        const o = this.outstanding.get(tag);
        if (!o) continue;
        this.outstanding.delete(tag);
        if (m.type === 'sent') o.resolve();
        else this.fallBack(o);
      }
    });
    // The router's thread ended (a crash, a stop): what it did not acknowledge goes to the send log.
    port2.on('close', () => this.unlinkMain(port2));
    port2.unref();
    this.unlinkMain(this.port);
    this.port = port2;
  }

  /** Sends being written to the send log (not yet flushed there). */
  private readonly writing = new Set<Promise<void>>();

  private unlinkMain(port: MessagePort | null): void {
    if (port === null || port !== this.port) return;
    this.port = null;
    port.close();
    const left = [...this.outstanding.values()];
    this.outstanding.clear();
    this.toPost = [];
    for (const o of left) this.fallBack(o);
  }

  private fallBack(o: { message: HiveMessage; resolve: () => void; reject: (err: unknown) => void }): void {
    void this.durably(o.message).then(o.resolve, o.reject);
  }

  private durably(message: HiveMessage): Promise<void> {
    const run = this.writeDurably(message);
    this.writing.add(run);
    void run.finally(() => this.writing.delete(run)).catch(() => undefined);
    return run;
  }

  /**
   * hive.send() (src/router/ingress.ts): while the router runs, the message goes to its
   * thread, which routes it in its next pass, and this resolves once every recipient's
   * inbox holds it durably (or it was dead-lettered with its reason). Otherwise, and while
   * any send is still being written to the send log (so a later send never overtakes an
   * earlier one: per sender, FIFO), it is written there (`writeDurably`).
   */
  send(message: HiveMessage): Promise<void> {
    if (this.port === null || this.writing.size > 0) return this.durably(message);
    return new Promise((resolve, reject) => {
      const tag = this.nextTag++;
      this.outstanding.set(tag, { message, resolve, reject });
      this.toPost.push({ tag, message });
      // Sends made in one turn of the event loop go as one message to the router.
      if (this.toPost.length === 1) queueMicrotask(() => this.postSends());
    });
  }

  private postSends(): void {
    const items = this.toPost;
    this.toPost = [];
    if (items.length > 0) this.port?.postMessage({ type: 'send', items } satisfies MainToRouterMessage);
  }

  /** Gives the router and an agent host a direct channel (wake-ups and kicks skip main). */
  async link(hostId: string, host: WorkerHandle<AgentHostApi>, agents: string[]): Promise<void> {
    const router = this.handle;
    if (!router) return;
    const { port1, port2 } = new MessageChannel();
    try {
      await router.call(async (api) => api.attachHost(hostId, agents, Comlink.transfer(port1, [port1])));
      await host.call(async (api) => api.attachRouter(Comlink.transfer(port2, [port2])));
    } catch (err) {
      appendEvent(this.ctx.root, { type: 'hive.link-failed', host: hostId, error: errorMessage(err) });
    }
  }

  /** A host's agents changed (one spawned into a running pool). */
  async updateHost(hostId: string, agents: string[]): Promise<void> {
    await this.handle?.call(async (api) => api.updateHost(hostId, agents));
  }

  /** Tells the router that these senders' outboxes changed (all of them when omitted). */
  kick(senders?: string[]): void {
    // Kicks made in one turn of the event loop go as one call (4,000 hive.send()s that a
    // group commit acknowledged together are one kick, not 4,000 messages to the worker).
    if (!senders) this.kicked = 'all';
    else if (this.kicked !== 'all') {
      const set = this.kicked ?? new Set<string>();
      for (const s of senders) set.add(s);
      this.kicked = set;
    }
    if (this.kickQueued) return;
    this.kickQueued = true;
    queueMicrotask(() => {
      this.kickQueued = false;
      const kicked = this.kicked;
      this.kicked = null;
      if (kicked === null) return;
      const list = kicked === 'all' ? undefined : [...kicked];
      if (this.port) this.port.postMessage({ type: 'kick', senders: list ?? null } satisfies MainToRouterMessage);
      else void this.child?.handle?.call(async (api) => api.kick(list)).catch(() => undefined);
    });
  }

  private kicked: Set<string> | 'all' | null = null;
  private kickQueued = false;

  /** What the router reported: its machine state, or a shortage it waits out (`reason`) or its end (null). */
  reported(update: { value: string } | { paused: string | null }): void {
    if ('value' in update) this.value = update.value;
    else this.paused = update.paused;
  }

  statusRow(): ActorStatus {
    return runtimeActorRow(ROUTER_HOST, 'router', this.value, this.child, this.paused);
  }

  /** The router's supervised child, for the inspector's host list (null before start). */
  supervised(): HostChild<RouterHostApi> | null {
    return this.child;
  }
}
