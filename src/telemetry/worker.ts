import type { MessagePort } from 'node:worker_threads';
import type { TracingHandle } from './sdk.ts';

/**
 * What a worker needs to start its own tracer provider (workers are separate JS realms:
 * a provider in the main thread does not exist for them). Part of `WorkerInit`.
 */
export interface WorkerTelemetryInit {
  /** file: URL of the bundled `sdk.ts`, imported only when this is set. */
  sdkUrl: string;
  serviceName: string;
  exportIntervalMs: number;
  attributes: Record<string, string | number>;
  otlpEndpoint?: string;
  /** Relay finished spans to the main thread (when the exporter lives there). */
  relay?: MessagePort;
}

/**
 * Starts the worker's tracer provider, or returns null when telemetry is off (the
 * default: no SDK code is loaded at all).
 */
export async function startWorkerTelemetry(init: WorkerTelemetryInit | undefined): Promise<TracingHandle | null> {
  if (!init) return null;
  const sdk = (await import(init.sdkUrl)) as typeof import('./sdk.ts');
  return sdk.startTracing({
    serviceName: init.serviceName,
    exportIntervalMs: init.exportIntervalMs,
    attributes: init.attributes,
    ...(init.otlpEndpoint ? { otlpEndpoint: init.otlpEndpoint } : {}),
    ...(init.relay ? { relay: init.relay } : {}),
  });
}
