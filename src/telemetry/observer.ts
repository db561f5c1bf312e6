import fs from 'node:fs';
import { agentPaths } from '../layout/paths.ts';
import { pathToFileURL } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import type { Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { WorkerEvent } from '../protocol/worker.ts';
import type { HiveConfig } from '../config/schema.ts';
import { AuditTrail } from '../audit/trail.ts';
import { recordQuestion } from '../human/ledger.ts';
import { isAnswer, isQuestion } from '../human/questions.ts';
import { GOD_ID } from '../protocol/agent-id.ts';
import { writeConfigSnapshot } from '../audit/config-snapshot.ts';
import { startLogRotation } from '../log/rotate.ts';
import { appendEvent, appendEvents, type HiveEvent } from '../log/event-log.ts';
import { HiveError, errorMessage } from '../errors.ts';
import { compiledEntry } from '../supervisor/bundle.ts';
import { createHiveMetrics, type HiveMetrics } from './metrics.ts';
import type { TracingHandle } from './sdk.ts';
import type { MetricsHandle } from './sdk-metrics.ts';
import type { WorkerTelemetryInit } from './worker.ts';
import { receiveSpans } from './relay.ts';

/** In-process exporters for an embedding application or a test (not part of the config file). */
export interface ObserveOptions {
  /** Spans of the main thread and of every worker (relayed) go to this exporter. */
  spanExporter?: SpanExporter;
  /** Reads the hive's metrics (e.g. an InMemoryMetricExporter behind a reader). */
  metricReader?: IMetricReader;
}

/**
 * The supervisor's observability (docs/architecture.md, "Observability"), in one place so the supervisor only
 * forwards events to it: tracing and metrics (when configured), the event log's
 * rotation, the git audit trail and the questions ledger.
 */
export class HiveObserver {
  tracer: Tracer | null = null;
  audit: AuditTrail | null = null;
  private tracing: TracingHandle | null = null;
  private metricsSdk: MetricsHandle | null = null;
  private metrics: HiveMetrics | null = null;
  private sdkUrl: string | null = null;
  private rotation: { stop(): Promise<void> } | null = null;

  private constructor(
    readonly root: string,
    readonly config: HiveConfig,
    private readonly options: ObserveOptions,
  ) {}

  /**
   * Starts what the config asks for. `inboxDepths` feeds the inbox-depth gauge.
   * @example const obs = await HiveObserver.start(config, {}, () => depths());
   */
  static async start(config: HiveConfig, options: ObserveOptions, inboxDepths: () => { agent: string; depth: number }[]): Promise<HiveObserver> {
    const o = new HiveObserver(config.root, config, options);
    o.rotation = startLogRotation(config.root, config.log);
    const t = config.telemetry;
    if (t || options.spanExporter || options.metricReader) {
      try {
        const serviceName = t?.serviceName ?? 'hive';
        const exportIntervalMs = t?.exportIntervalMs ?? 1_000;
        if (t || options.spanExporter) {
          const sdk = await import('./sdk.ts');
          o.tracing = sdk.startTracing({
            serviceName,
            exportIntervalMs,
            attributes: { 'hive.host': 'supervisor', 'hive.root': config.root },
            ...(options.spanExporter ? { exporter: options.spanExporter } : { otlpEndpoint: t!.otlpEndpoint }),
          });
          o.tracer = o.tracing.tracer;
          o.sdkUrl = pathToFileURL(await compiledEntry('telemetry-sdk')).href;
        }
        const m = await import('./sdk-metrics.ts');
        o.metricsSdk = m.startMetrics({
          serviceName,
          exportIntervalMs,
          ...(t ? { otlpEndpoint: t.otlpEndpoint } : {}),
          ...(options.metricReader ? { reader: options.metricReader } : {}),
        });
        o.metrics = createHiveMetrics(o.metricsSdk.meter, inboxDepths);
      } catch (err) {
        throw new HiveError('E_BAD_CONFIG', `Cannot start telemetry: ${errorMessage(err)}. The OpenTelemetry SDK packages are optional dependencies: run \`npm install\` or remove \`telemetry\` from the config.`, { cause: err });
      }
    }
    if (config.audit.enabled) {
      writeConfigSnapshot(config.root, { ...config, configDir: undefined });
      const audit = new AuditTrail(config.root, { intervalMs: config.audit.intervalMs });
      o.audit = audit;
      // git runs now, before any worker: a git process forked later, from a supervisor
      // that is starting a hundred worker threads, slowed a 100-agent cold start by a
      // fifth (README, "Performance": start-up). For the same
      // reason the first commit waits for `started()`.
      audit.hold();
      try {
        await audit.start();
      } catch (err) {
        // No git, or a broken repository: the hive runs without its audit trail.
        appendEvent(config.root, { type: 'audit.failed', error: errorMessage(err) });
        o.audit = null;
      }
    }
    return o;
  }

  /** Telemetry settings for a new worker (each start of a worker gets a fresh relay port). */
  workerTelemetry(hostId: string, agents: string[]): WorkerTelemetryInit | undefined {
    if (!this.sdkUrl) return undefined;
    const t = this.config.telemetry;
    const attributes: Record<string, string | number> = { 'hive.host': hostId };
    if (agents.length === 1) attributes['agent.id'] = agents[0]!;
    const init: WorkerTelemetryInit = {
      sdkUrl: this.sdkUrl,
      serviceName: t?.serviceName ?? 'hive',
      exportIntervalMs: t?.exportIntervalMs ?? 1_000,
      attributes,
    };
    if (this.options.spanExporter) {
      const { port1, port2 } = new MessageChannel();
      receiveSpans(port1, this.options.spanExporter);
      init.relay = port2;
    } else if (t) init.otlpEndpoint = t.otlpEndpoint;
    return init;
  }

  /** The hive is ready: the audit trail may commit (it held its commits while workers started). */
  started(): void {
    this.audit?.release();
  }

  /** Significant change for the audit trail. */
  note(reason: string): void {
    this.audit?.note(reason);
  }

  private turnLines: HiveEvent[] = [];

  private logTurn(line: HiveEvent): void {
    if (this.turnLines.push(line) > 1) return;
    setImmediate(() => {
      const lines = this.turnLines;
      this.turnLines = [];
      try {
        appendEvents(this.root, lines);
      } catch {
        // best effort, like every log line
      }
    });
  }

  restarted(host: string): void {
    this.metrics?.restarted(host);
  }

  onWorkerEvent(e: WorkerEvent): void {
    switch (e.type) {
      case 'router.delivered':
        e.deliveries.forEach((d, i) => {
          this.metrics?.delivered(d.agent, e.latenciesMs[i]);
          if (d.agent === GOD_ID && isQuestion(d)) {
            recordQuestion(this.root, d);
            this.note(`question ${d.id} from ${d.from}`);
          } else if (isAnswer(d)) {
            // Its ledger line was written when the answer was given (human/questions.ts).
            this.note(`answer to ${d.in_reply_to}`);
          }
        });
        break;
      case 'router.rejected':
        for (const item of e.items) this.metrics?.deadLettered(item.code ?? 'E_BAD_MESSAGE');
        break;
      case 'actor.poisoned':
        this.metrics?.deadLettered('E_POISON');
        break;
      case 'actor.processed':
        // A brain may have written memory.md during the turn. One stat tells whether it did;
        // a git run for every busy turn would compete with the queues for the disk.
        // (Only for the audit trail: without one, nothing is noted.)
        if (this.audit && this.memoryChanged(e.agent)) this.note(`memory of ${e.agent}`);
        // One line a committed turn, written here, off the agent's path: what it handled and
        // sent, and how long it thought (the inspector's conversation view reads it). The
        // turns of one tick go out in one append (a busy hive commits hundreds a second).
        if (e.handled.length > 0 || e.sent.length > 0) {
          this.logTurn({
            type: 'actor.turn',
            agent: e.agent,
            cursor: e.cursor,
            handled: e.handled.map((h) => h.id),
            sent: e.sent.map((s) => s.id),
            fetch_ms: Math.round(e.timings.fetchMs),
            think_ms: Math.round(e.timings.thinkMs),
            commit_ms: Math.round(e.timings.commitMs),
          });
        }
        break;
      default:
        break;
    }
  }

  private readonly memoryStamps = new Map<string, string>();

  /** When this observer started: a memory first seen with a later mtime changed since. */
  private readonly startedAt = Date.now();

  private memoryChanged(agent: string): boolean {
    let stamp = 'missing';
    let mtimeMs = 0;
    try {
      const st = fs.statSync(agentPaths(this.root, agent).memory);
      stamp = `${st.mtimeMs}:${st.size}`;
      mtimeMs = st.mtimeMs;
    } catch {
      stamp = 'missing';
    }
    const before = this.memoryStamps.get(agent);
    this.memoryStamps.set(agent, stamp);
    return before === undefined ? mtimeMs >= this.startedAt : before !== stamp;
  }

  /** Final audit commit, last export, rotation stopped. */
  async close(): Promise<void> {
    await this.rotation?.stop();
    await this.audit?.close();
    // An exporter passed in by the caller stays theirs: flush into it, do not shut it down.
    if (this.options.spanExporter) await this.tracing?.forceFlush().catch(() => undefined);
    else await this.tracing?.shutdown().catch(() => undefined);
    await (this.options.metricReader ? this.metricsSdk?.forceFlush() : this.metricsSdk?.shutdown())?.catch(() => undefined);
  }
}
