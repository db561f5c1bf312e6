/**
 * Worker entry: the router actor. Routes on outbox file events (see outbox-watcher.ts), on direct
 * notices from senders (`kick`), and on a slow safety poll. Not exported from the package.
 */
import type { MessagePort } from 'node:worker_threads';
import { createActor, fromPromise } from 'xstate';
import { watchOutboxes, type OutboxWatcher } from '../src/router/outbox-watcher.ts';
import { PassTurns } from '../src/router/pass-turns.ts';
import { PendingOutboxes } from '../src/router/pending-outboxes.ts';
import type { MainToRouterMessage, RouterHostApi, RouterToMainMessage } from '../src/protocol/worker.ts';
import { Ingress, type IngressItem } from '../src/router/ingress.ts';
import { isRealDirectory } from '../src/fs/regular-file.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { beginWorker, exposeWorker, untilStopped, watchActor } from '../src/worker/host.ts';
import { coalescedStateReport } from '../src/worker/state-report.ts';
import type { HiveMessage } from '../src/protocol/message.ts';
import type { DeadLetterReason } from '../src/queue/dead-letter.ts';
import { HostLinks } from '../src/router/host-links.ts';
import { routerMachine } from '../machines/router.ts';
import { GOD_ID } from '../src/protocol/agent-id.ts';
import { openHostTransport } from '../src/queue/open-transport.ts';
import { durabilityOf } from '../src/queue/cluster-durability.ts';
import type { ClusterFile } from '../src/supervisor/cluster.ts';
import { clusterFilePath } from '../src/supervisor/cluster-file.ts';
import { writeJsonAtomic } from '../src/fs/atomic.ts';
import { routeOnce } from '../src/router/route.ts';
import { startMemoryMirror } from '../src/memory/cluster-memory.ts';
import { trimDeferred } from '../src/fs/capped.ts';
import { createDirectoryCache } from '../src/router/directory.ts';
import { hivePaths } from '../src/layout/paths.ts';
import { appendEvent } from '../src/log/event-log.ts';
import { describeShortage, shortageDelay } from '../src/fs/shortage.ts';
import { errorMessage } from '../src/errors.ts';
import { startWorkerTelemetry } from '../src/telemetry/worker.ts';
import { endWithError, startDeliver, startRoute } from '../src/telemetry/spans.ts';
import type { Span } from '@opentelemetry/api';

const host = beginWorker();
const { init, emit } = host;
const settings = init.routerSettings!;
const directory = createDirectoryCache(init.root, (agent, reason) => appendEvent(init.root, { type: 'router.folder-refused', agent, reason }));
/** Cluster mode: the agents pinned to this machine; the ones leased here are those of linked hosts. */
const pinnedHere = new Set(init.cluster?.local ?? []);
/** Direct links to agent hosts (their kicks, the router's wakes). */
const hosts = new HostLinks();
const runsHere = (id: string) => pinnedHere.has(id) || hosts.has(id);
const transport = await openHostTransport(init.root, init.cluster, {
  sentCap: settings.sentCap,
  doneCap: settings.doneCap,
  isRecipient: (id) => directory().all.has(id),
  isLocal: runsHere,
  tellDeliveries: !init.cluster, // one machine: the wakes carry what was delivered
});
/** This worker's own tracer provider (null: telemetry off, no SDK loaded). */
const telemetry = await startWorkerTelemetry(init.telemetry);
const tracer = telemetry?.tracer ?? null;

const pending = new PendingOutboxes();
const passTurns = new PassTurns();
/** The last reason logged for each sender whose outbox could not be routed. */
const refusedTold = new Map<string, string>();

function senderRefused(sender: string, error: string): void {
  // Once per sender and reason: a broken outbox is retried every pass, and logged when it changes.
  if (refusedTold.get(sender) === error) return;
  refusedTold.set(sender, error);
  appendEvent(init.root, { type: 'router.sender-refused', agent: sender, error });
}

/** hive.send()'s messages, posted by the main thread and acknowledged once routed (src/router/ingress.ts). */
const ingress = new Ingress();
const routing = ingress.over(transport, (sender, err) => senderRefused(sender, errorMessage(err)));
let mainPort: MessagePort | null = null;

/** Takes the sends of senders that are agents here; the main thread writes the others to the send log (its writer says why). */
function acceptSends(items: IngressItem[]): void {
  const dir = directory();
  const { senders, refused } = ingress.accept(items, (from) => dir.senders.has(from) && isRealDirectory(agentPaths(init.root, from).dir));
  if (refused.length > 0) mainPort?.postMessage({ type: 'refused', tags: refused } satisfies RouterToMainMessage);
  if (senders.length > 0) outboxChanged(senders, true); // in memory: their files did not change
}

/** Senders wrote (none named: every outbox): read next pass. `told`: only sends or commits told in memory; a folder is read unless a working watch would report its files. */
function outboxChanged(senders?: string[], told = false): void {
  if (pending.mark(senders, told ? { files: (s) => watcher?.watching(s) !== true } : {})) actor.send({ type: 'hive.outbox.changed' });
}

const wakeRecipients = (agents: string[]) => hosts.wake(agents, (a) => routing.takeDeliveries?.(a) ?? []);

const machine = routerMachine.provide({
  actors: {
    routePass: fromPromise(async () => {
      await passTurns.before();
      const latenciesMs: number[] = [];
      /** Recipients woken over a direct channel this pass: main need not wake them again. */
      const woken: string[] = [];
      // Route spans by message id, ended when every recipient has it (or at the end of the pass).
      const routeSpans = new Map<string, { span: Span | null; left: number }>();
      const dir = directory(); // once per pass: each look checks agents/ and registry.json
      const senders = pending.take(dir.senders);
      const report = await routeOnce({
        root: init.root,
        transport: routing,
        directory: dir,
        ...(senders ? { senders, light: pending.lightOnes() } : {}),
        settings: { hopCap: settings.hopCap, batchPerSender: settings.batchPerSender },
        onInboxCommitted: (agent) => woken.push(...wakeRecipients([agent])),
        onDelivered: (m, agent, _seq, startedAt) => {
          latenciesMs.push(Date.now() - Date.parse(m.created_at));
          if (!tracer) return;
          const r = routeSpans.get(m.id);
          startDeliver(tracer, r?.span ?? null, m, agent, startedAt)?.end();
          if (r && --r.left <= 0) {
            r.span?.end();
            routeSpans.delete(m.id);
          }
        },
        ...(tracer
          ? {
              onRouted: (m: HiveMessage, recipients: string[]) => {
                routeSpans.get(m.id)?.span?.end();
                routeSpans.set(m.id, { span: startRoute(tracer, m, recipients), left: recipients.length });
              },
              onRejected: (m: HiveMessage | null, reason: DeadLetterReason) => {
                if (m) endWithError(startRoute(tracer, m, []), reason.error);
              },
            }
          : {}),
      });
      for (const r of routeSpans.values()) r.span?.end(); // duplicates: already delivered earlier
      if (report.delivered.length > 0) {
        // Bounce notices to god are delivered after the pass's own commits: wake god too.
        if (report.delivered.some((d) => d.agent === GOD_ID)) woken.push(...wakeRecipients([GOD_ID]));
        emit({ type: 'router.delivered', deliveries: report.delivered, latenciesMs, woken });
      }
      if (report.rejected.length > 0) {
        emit({
          type: 'router.rejected',
          items: report.rejected.map((r) => ({ sender: r.sender, ref: r.ref, error: r.reason.error, ...(r.reason.code ? { code: r.reason.code } : {}) })),
        });
      }
      // Sends routed this pass (their deliveries flushed, or dead-lettered): acknowledged.
      const acked = ingress.takeAcked();
      if (acked.length > 0) mainPort?.postMessage({ type: 'sent', tags: acked } satisfies RouterToMainMessage);
      for (const r of report.refused) senderRefused(r.sender, r.error);
      pending.keep(report.moreSenders);
      if (!report.more) trimWhenIdle();
      if (report.shortage !== undefined) waitOutShortage(report.shortage, senders);
      else if (shortage.reason !== null && covers(senders, shortage.senders)) resumed();
      if (report.unsettled > 0) {
        // Files caught mid-write: look at those senders' outboxes again shortly (not at every
        // outbox: at 10,000 agents that was a sweep of 40 slices for one torn file).
        const again = report.unsettledSenders;
        setTimeout(() => outboxChanged(again), 300).unref();
      }
      const more = report.more || (report.shortage === undefined && pending.sweeping());
      passTurns.after(more);
      return { delivered: report.delivered.length, rejected: report.rejected.length, more };
    }),
  },
});

/**
 * Routed files are moved to `outbox/.sent/` on the message path; trimming those folders to
 * their cap (unlinks: inode and block frees) waits until the router is idle, one folder per
 * tick, so it never holds up the writers of new outbox files (src/fs/capped.ts).
 */
let trimTimer: NodeJS.Timeout | null = null;
function trimWhenIdle(): void {
  if (trimTimer) return;
  trimTimer = setTimeout(() => {
    trimTimer = null;
    if (String(actor.getSnapshot().value) !== 'idle') return trimWhenIdle();
    if (trimDeferred(1) > 0) trimWhenIdle();
  }, 100);
  trimTimer.unref();
}

/**
 * A pass that stopped for want of a resource (a full disk) is tried again with backoff:
 * the router is paused, not crashed, and what it did not route stays in its outboxes.
 */
const shortage = { reason: null as string | null, since: 0, attempt: 0, senders: undefined as Set<string> | undefined };

/** True when a pass over `pass` (undefined: every outbox) read every outbox in `paused`. */
function covers(pass: Set<string> | undefined, paused: Set<string> | undefined): boolean {
  if (pass === undefined) return true;
  if (paused === undefined) return false;
  for (const s of paused) if (!pass.has(s)) return false;
  return true;
}

function waitOutShortage(error: unknown, senders: Set<string> | undefined): void {
  const reason = describeShortage(error);
  shortage.senders = senders;
  if (shortage.reason !== reason) {
    if (shortage.reason === null) shortage.since = Date.now();
    shortage.reason = reason;
    emit({ type: 'actor.paused', agent: 'router', reason, error: errorMessage(error) });
    appendEvent(init.root, { type: 'actor.paused', agent: 'router', reason, error: errorMessage(error) });
  }
  const delay = shortageDelay(shortage.attempt++);
  setTimeout(() => outboxChanged(senders ? [...senders] : undefined), delay).unref();
}

function resumed(): void {
  const pausedMs = Date.now() - shortage.since;
  shortage.reason = null;
  shortage.attempt = 0;
  emit({ type: 'actor.resumed', agent: 'router', pausedMs });
  appendEvent(init.root, { type: 'actor.resumed', agent: 'router', paused_ms: pausedMs });
}

/**
 * What this cluster setup can promise (src/queue/cluster-durability.ts): logged, and kept
 * in `cluster.json` for `hive status` and `hive start` to show.
 */
async function reportDurability(js: NonNullable<typeof transport.jetstream>, cluster: NonNullable<typeof init.cluster>): Promise<void> {
  const setup = await js.setup();
  const report = durabilityOf(setup.serverVersion, setup.replicas);
  writeJsonAtomic(clusterFilePath(init.root), { host: cluster.host, servers: cluster.servers, prefix: cluster.prefix, local: cluster.local, placement: cluster.placement, ...report, checked_at: new Date().toISOString() } satisfies ClusterFile);
  appendEvent(init.root, { type: 'cluster.durability', host: cluster.host, server_version: report.serverVersion, replicas: report.replicas, warnings: report.warnings });
}

const actor = createActor(machine);
// Coalesced: a pass is routing → idle, and a report per transition woke the main thread twice a pass.
watchActor(actor, init.root, 'router', coalescedStateReport(100, 'idle', (value) => emit({ type: 'router.state', value })));

let watcher: OutboxWatcher | null = null;
let stopCommits: (() => void) | null = null;
let stopMirror: (() => void) | null = null;
let poll: NodeJS.Timeout | null = null;

const api: RouterHostApi = {
  async start() {
    // The watch first, then the first pass (a sweep of every outbox): on Linux a file that
    // lands in an outbox after the sweep read it is then always an event (the watcher does
    // not report the outboxes that were there when it started: the sweep reads them).
    if (settings.watch) {
      const agentsDir = hivePaths(init.root).agents;
      watcher = watchOutboxes(
        agentsDir,
        (agent) => outboxChanged([agent]),
        (err) => appendEvent(init.root, { type: 'router.watch-error', error: String(err) }),
        (agent) => pending.due(agent),
      );
    }
    actor.start();
    if (init.cluster) {
      // Every agent of the hive has an inbox stream, wherever it runs. A commit by one of
      // this machine's agents (the port's kick also says so), or a send over NATS by a
      // sender that runs here, is routed here.
      const js = transport.jetstream!;
      await Promise.all([...new Set([...init.cluster.agents, ...directory().all])].map((id) => js.ensureAgent(id)));
      // Heard on NATS, not in a file: a light look (the sender's local files are read only
      // when no working watch would report them).
      stopCommits = js.onSent((sender) => runsHere(sender) && outboxChanged([sender], true));
      outboxChanged();
      await reportDurability(js, init.cluster);
      // Every agent's: a leased one takes its lease after this (the first machine with entries brings them).
      stopMirror = await startMemoryMirror(init.root, js.files, [...directory().all], (agent) => emit({ type: 'memory.mirrored', agent }));
    }
    poll = setInterval(() => {
      if (pending.poll(directory().senders)) actor.send({ type: 'hive.router.poll' });
    }, settings.pollMs);
  },
  kick(senders) {
    outboxChanged(senders);
  },
  attachMain(port) {
    mainPort?.close();
    mainPort = port;
    port.on('message', (m: MainToRouterMessage) => {
      if (m.type === 'kick') {
        outboxChanged(m.senders ?? undefined);
      } else acceptSends(m.items);
    });
    port.unref();
  },
  attachHost(hostId, agents, port) {
    hosts.attach(hostId, agents, port, (m) => {
      if (m.commits) routing.offerCommits?.(m.commits);
      // A kick with its commits, or in cluster mode (a commit went to NATS): no file changed.
      outboxChanged(m.senders, m.commits !== undefined || init.cluster !== undefined);
    });
  },
  updateHost(hostId, agents) {
    hosts.update(hostId, agents);
  },
  async stop() {
    if (poll) clearInterval(poll);
    stopCommits?.();
    stopMirror?.();
    await watcher?.close();
    actor.send({ type: 'hive.stop' });
    await untilStopped(actor);
    transport.close();
    await telemetry?.forceFlush().catch(() => undefined);
  },
  status() {
    const s = actor.getSnapshot();
    return { value: String(s.value), passes: s.context.passes, delivered: s.context.delivered, rejected: s.context.rejected };
  },
};

exposeWorker(host, api);
