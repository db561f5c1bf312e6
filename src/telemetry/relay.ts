import type { MessagePort } from 'node:worker_threads';
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace-base';

/**
 * Span relay: a worker's tracer provider exports finished spans to the main thread
 * over a MessagePort, and the main thread hands them to its own exporter. Used when
 * the exporter is an object living in the main thread (an in-memory exporter in tests,
 * an exporter an embedding application passes to `createHive`). With `otlpEndpoint`
 * configured, workers export straight to the collector instead.
 */

/** A finished span as plain data (structured-cloneable). */
export interface SpanData {
  name: string;
  kind: SpanKind;
  spanContext: SpanContext;
  parentSpanContext?: SpanContext;
  startTime: HrTime;
  endTime: HrTime;
  status: SpanStatus;
  attributes: Attributes;
  links: Link[];
  events: TimedEvent[];
  duration: HrTime;
  resource: Attributes;
  scope: { name: string; version?: string };
  dropped: [number, number, number];
}

export function toSpanData(s: ReadableSpan): SpanData {
  return {
    name: s.name,
    kind: s.kind,
    spanContext: s.spanContext(),
    ...(s.parentSpanContext ? { parentSpanContext: s.parentSpanContext } : {}),
    startTime: s.startTime,
    endTime: s.endTime,
    status: s.status,
    attributes: s.attributes,
    links: s.links,
    events: s.events,
    duration: s.duration,
    resource: s.resource.attributes,
    scope: { name: s.instrumentationScope.name, ...(s.instrumentationScope.version ? { version: s.instrumentationScope.version } : {}) },
    dropped: [s.droppedAttributesCount, s.droppedEventsCount, s.droppedLinksCount],
  };
}

export function fromSpanData(d: SpanData): ReadableSpan {
  return {
    name: d.name,
    kind: d.kind,
    spanContext: () => d.spanContext,
    ...(d.parentSpanContext ? { parentSpanContext: d.parentSpanContext } : {}),
    startTime: d.startTime,
    endTime: d.endTime,
    status: d.status,
    attributes: d.attributes,
    links: d.links,
    events: d.events,
    duration: d.duration,
    ended: true,
    resource: resourceFromAttributes(d.resource),
    instrumentationScope: d.scope,
    droppedAttributesCount: d.dropped[0],
    droppedEventsCount: d.dropped[1],
    droppedLinksCount: d.dropped[2],
  };
}

/** The worker side: an exporter that posts spans to the main thread. */
export class PortSpanExporter implements SpanExporter {
  constructor(private readonly port: MessagePort) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    try {
      this.port.postMessage(spans.map(toSpanData));
      done({ code: ExportResultCode.SUCCESS });
    } catch (err) {
      done({ code: ExportResultCode.FAILED, error: err as Error });
    }
  }

  async shutdown(): Promise<void> {
    // The port belongs to the worker's lifetime; nothing to release here.
  }
}

/** The main side: forwards relayed spans to `exporter`. */
export function receiveSpans(port: MessagePort, exporter: SpanExporter): void {
  port.on('message', (batch: SpanData[]) => {
    exporter.export(batch.map(fromSpanData), () => undefined);
  });
  port.unref();
}
