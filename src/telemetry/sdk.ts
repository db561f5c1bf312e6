import type { MessagePort } from 'node:worker_threads';
import type { Tracer } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PortSpanExporter } from './relay.ts';

/**
 * The tracing SDK, loaded only when telemetry is configured: the main thread imports it
 * lazily, and workers import a separately bundled copy by URL (so a worker of a hive
 * without telemetry neither parses nor loads any SDK code).
 */

export interface TracingSettings {
  serviceName: string;
  exportIntervalMs: number;
  /** Resource attributes beyond service.name (hive.host, agent.id, ...). */
  attributes: Record<string, string | number>;
  /** Export to this OTLP/HTTP base URL (…/v1/traces is appended)... */
  otlpEndpoint?: string;
  /** ...or to this exporter object (main thread)... */
  exporter?: SpanExporter;
  /** ...or relay finished spans to the main thread over this port (workers). */
  relay?: MessagePort;
}

export interface TracingHandle {
  tracer: Tracer;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The OTLP traces URL for a base endpoint, as the OTEL_EXPORTER_OTLP_ENDPOINT rules say. */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Starts a tracer provider with a batch processor and returns its tracer. The provider
 * is not registered globally: the runtime passes its tracer explicitly.
 * @example const t = startTracing({ serviceName: 'hive', exportIntervalMs: 1000, attributes: {}, otlpEndpoint: 'http://127.0.0.1:4318' });
 */
export function startTracing(s: TracingSettings): TracingHandle {
  const exporter: SpanExporter =
    s.exporter ?? (s.relay ? new PortSpanExporter(s.relay) : new OTLPTraceExporter({ url: tracesUrl(s.otlpEndpoint ?? 'http://127.0.0.1:4318') }));
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: s.serviceName, ...s.attributes }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: s.exportIntervalMs, maxQueueSize: 8_192, maxExportBatchSize: 512 })],
  });
  return {
    tracer: provider.getTracer('hive'),
    // The processor's flush only exports what is still queued; an export its timer started
    // a moment earlier may still be in flight (an HTTP request), and a worker terminated
    // now would lose it. The exporter's own flush waits for those.
    forceFlush: async () => {
      await provider.forceFlush();
      await exporter.forceFlush?.();
    },
    shutdown: () => provider.shutdown(),
  };
}
