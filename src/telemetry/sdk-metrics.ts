import type { Meter } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { MeterProvider, PeriodicExportingMetricReader, type IMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';

/** The metrics SDK (main thread only), loaded lazily like `sdk.ts`. */
export interface MetricsHandle {
  meter: Meter;
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

export function metricsUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/metrics`;
}

export function startMetrics(s: { serviceName: string; exportIntervalMs: number; otlpEndpoint?: string; reader?: IMetricReader }): MetricsHandle {
  const readers: IMetricReader[] = [];
  if (s.reader) readers.push(s.reader);
  if (s.otlpEndpoint) {
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: metricsUrl(s.otlpEndpoint) }),
        exportIntervalMillis: Math.max(s.exportIntervalMs, 1_000),
        exportTimeoutMillis: Math.max(s.exportIntervalMs, 1_000),
      }),
    );
  }
  const provider = new MeterProvider({ resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: s.serviceName }), readers });
  return { meter: provider.getMeter('hive'), shutdown: () => provider.shutdown(), forceFlush: () => provider.forceFlush() };
}
