import { TraceFlags, isSpanContextValid, type SpanContext } from '@opentelemetry/api';

/**
 * W3C trace context (`traceparent`, version 00) for messages: the field carries the
 * trace across worker threads and processes, because a message is the only thing that
 * travels with the work.
 */

const PATTERN = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The span context in a traceparent, or null when absent, malformed or all-zero.
 * @example parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
 */
export function parseTraceparent(value: string | undefined | null): SpanContext | null {
  if (!value) return null;
  const m = PATTERN.exec(value);
  if (!m || m[1] === 'ff') return null;
  const sc: SpanContext = { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & 0xff, isRemote: true };
  return isSpanContextValid(sc) ? sc : null;
}

/** @example formatTraceparent(span.spanContext()) // '00-<trace>-<span>-01' */
export function formatTraceparent(sc: SpanContext): string {
  const flags = (sc.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  return `00-${sc.traceId}-${sc.spanId}-${flags}`;
}
