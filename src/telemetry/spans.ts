import { ROOT_CONTEXT, SpanKind, isSpanContextValid, SpanStatusCode, trace, type Attributes, type Context, type Span, type TimeInput, type Tracer } from '@opentelemetry/api';
import type { HiveMessage } from '../protocol/message.ts';
import { formatTraceparent, parseTraceparent } from './traceparent.ts';

/**
 * The spans of a message's life, joined into one trace by the message's `traceparent`:
 *
 *   hive.send (producer; its context is written into the message)
 *   ├── hive.route   (router worker: the routing decision)
 *   │   └── hive.deliver  (the write into one recipient's inbox)
 *   └── hive.handle  (consumer: the recipient's brain turn for this message)
 *       └── hive.send (a reply; the chain goes on)
 *
 * The router never rewrites a message (delivery hard-links the sender's file), so the
 * handler's parent is the send span, as in OpenTelemetry's messaging conventions.
 *
 * Every helper takes a `Tracer | null`: null (telemetry off) costs one branch, no
 * allocation. With telemetry on but no SDK registered the API's no-op tracer is used.
 */

export const MESSAGING_SYSTEM = 'hive';

export function messageAttributes(m: HiveMessage): Attributes {
  return {
    'messaging.system': MESSAGING_SYSTEM,
    'messaging.message.id': m.id,
    'messaging.message.conversation_id': m.conversation,
    'messaging.destination.name': m.to,
    'hive.message.from': m.from,
    'hive.message.act': m.act,
    'hive.message.hops': m.hops,
  };
}

/** The context a message's spans hang from: its traceparent, or a new root. */
export function contextOf(m: Pick<HiveMessage, 'traceparent'>): Context {
  const sc = parseTraceparent(m.traceparent);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/**
 * Starts a `hive.send` span for a message about to be written and returns the message
 * carrying the span's traceparent. `parent` is the handling span of the input when an
 * agent replies; otherwise the message's own traceparent (if any) is the parent.
 */
export function startSend(tracer: Tracer | null, m: HiveMessage, parent?: Context): { message: HiveMessage; span: Span | null } {
  if (!tracer) return { message: m, span: null };
  const span = tracer.startSpan(`hive.send ${m.to}`, { kind: SpanKind.PRODUCER, attributes: { ...messageAttributes(m), 'messaging.operation.type': 'send' } }, parent ?? contextOf(m));
  const sc = span.spanContext();
  // A no-op tracer gives an invalid context (or the parent's): keep the message as it is.
  if (!isSpanContextValid(sc)) return { message: m, span };
  return { message: { ...m, traceparent: formatTraceparent(sc) }, span };
}

export function startRoute(tracer: Tracer | null, m: HiveMessage, recipients: string[], startTime?: TimeInput): Span | null {
  if (!tracer) return null;
  return tracer.startSpan(
    'hive.route',
    { kind: SpanKind.INTERNAL, attributes: { ...messageAttributes(m), 'hive.route.recipients': recipients }, ...(startTime !== undefined ? { startTime } : {}) },
    contextOf(m),
  );
}

export function startDeliver(tracer: Tracer | null, route: Span | null, m: HiveMessage, agent: string, startTime?: TimeInput): Span | null {
  if (!tracer) return null;
  const parent = route ? trace.setSpan(ROOT_CONTEXT, route) : contextOf(m);
  return tracer.startSpan(
    `hive.deliver ${agent}`,
    { kind: SpanKind.PRODUCER, attributes: { ...messageAttributes(m), 'hive.inbox': agent, 'messaging.operation.type': 'send' }, ...(startTime !== undefined ? { startTime } : {}) },
    parent,
  );
}

export function startHandle(tracer: Tracer | null, m: HiveMessage, agent: string, seq: number): Span | null {
  if (!tracer) return null;
  return tracer.startSpan(
    `hive.handle ${agent}`,
    { kind: SpanKind.CONSUMER, attributes: { ...messageAttributes(m), 'agent.id': agent, 'hive.inbox.seq': seq, 'messaging.operation.type': 'process' } },
    contextOf(m),
  );
}

/** The context whose active span is `span` (for children), or ROOT when there is none. */
export function contextWith(span: Span | null): Context {
  return span ? trace.setSpan(ROOT_CONTEXT, span) : ROOT_CONTEXT;
}

export function endWithError(span: Span | null, message: string): void {
  if (!span) return;
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}
