import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { fastConfig, nextEvent, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES } from './helpers/fixture.ts';
import { createHive } from '../src/hive.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { parseTraceparent } from '../src/telemetry/traceparent.ts';
import { otelEnvFor } from '../src/telemetry/env.ts';

const agents = [
  { id: 'forwarder', brain: { kind: 'module' as const, module: path.join(FIXTURES, 'brains', 'forwarder.ts') } },
  { id: 'echo', brain: { kind: 'echo' as const } },
  { id: 'client', brain: { kind: 'external' as const } },
];

/** One span as the assertions need it, from the SDK or from OTLP JSON. */
interface S {
  name: string;
  traceId: string;
  spanId: string;
  parent: string | null;
  attrs: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** Resolves when `check()` holds, re-checking every 20 ms (a condition, not a fixed sleep). */
async function until(check: () => boolean, label: string | (() => string), timeoutMs = 45_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof label === 'function' ? label() : label}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** 4 sends, 4 routes, 4 deliveries and 3 handles (the client is not an actor). */
const CHAIN_SPANS = 15;

/**
 * client →(1) forwarder →(2) echo →(3) forwarder →(4) client, across two agent workers:
 * one trace; every span's parent is the one the message's traceparent names.
 */
function assertChain(spans: S[], firstId: string): void {
  const traceIds = new Set(spans.map((s) => s.traceId));
  expect(traceIds.size, JSON.stringify(spans.map((s) => [s.name, s.traceId]))).toBe(1);
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const parentOf = (s: S) => (s.parent ? byId.get(s.parent) : undefined);
  const find = (name: string, msg?: string) => {
    const found = spans.filter((s) => s.name === name && (msg === undefined || s.attrs['messaging.message.id'] === msg));
    expect(found.length, `${name} ${msg ?? ''}`).toBe(1);
    return found[0]!;
  };
  const sends = spans.filter((s) => s.name.startsWith('hive.send'));
  expect(sends).toHaveLength(4);
  const send1 = find('hive.send forwarder', firstId);
  expect(send1.parent).toBeNull();
  expect(send1.resource['hive.host']).toBe('supervisor');
  const handles = spans.filter((s) => s.name.startsWith('hive.handle'));
  expect(handles).toHaveLength(3);
  // Each hop: route ← send, deliver ← route, handle ← send, next send ← handle.
  let send = send1;
  const hops: [string, string][] = [
    ['forwarder', 'echo'],
    ['echo', 'forwarder'],
    ['forwarder', 'client'],
  ];
  for (const [recipient, next] of [...hops, ['client', ''] as [string, string]]) {
    const msg = send.attrs['messaging.message.id'] as string;
    const route = find('hive.route', msg);
    expect(parentOf(route)).toBe(send);
    const deliver = find(`hive.deliver ${recipient}`, msg);
    expect(parentOf(deliver)).toBe(route);
    expect(route.resource['hive.host']).toBe('router');
    if (next === '') break;
    const handle = find(`hive.handle ${recipient}`, msg);
    expect(parentOf(handle)).toBe(send);
    expect(handle.resource['agent.id']).toBe(recipient);
    const nextSend = sends.find((s) => parentOf(s) === handle);
    expect(nextSend, `send after handle ${recipient}`).toBeDefined();
    expect(nextSend!.name).toBe(`hive.send ${next}`);
    send = nextSend!;
  }
  // Two different worker threads handled the chain.
  expect(new Set(handles.map((h) => h.resource['hive.host'])).size).toBe(2);
  expect(spans.length).toBe(CHAIN_SPANS);
}

function fromSdk(s: ReadableSpan): S {
  return {
    name: s.name,
    traceId: s.spanContext().traceId,
    spanId: s.spanContext().spanId,
    parent: s.parentSpanContext?.spanId ?? null,
    attrs: { ...s.attributes },
    resource: { ...s.resource.attributes },
  };
}

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

describe('OpenTelemetry tracing across workers', () => {
  it('in-memory exporter: a request→reply chain over two workers is one trace with the right parents; metrics are recorded', async () => {
    const exporter = new InMemorySpanExporter();
    const reader = new TestReader();
    const hive = createHive(fastConfig({ agents }), { observe: { spanExporter: exporter, metricReader: reader } });
    let firstId = '';
    await hive.start();
    try {
      const answered = nextEvent(hive, 'delivered', (d) => d.agent === 'client');
      const first = await hive.send({ from: 'client', to: 'forwarder', act: 'request', body: 'hello' });
      firstId = first.id;
      expect(parseTraceparent(first.traceparent)).not.toBeNull();
      await answered; // the supervisor has seen every delivery (the metrics are recorded from these events)
      const answer = readInbox(hive.root, 'client', 0).entries[0]!.message;
      expect(answer.body).toBe('done: hello');
      expect(parseTraceparent(answer.traceparent)!.traceId).toBe(parseTraceparent(first.traceparent)!.traceId);

      const { resourceMetrics } = await reader.collect();
      const metrics = new Map(resourceMetrics.scopeMetrics.flatMap((sm) => sm.metrics.map((m) => [m.descriptor.name, m])));
      const latency = metrics.get('hive.delivery.latency')!.dataPoints as DataPoint<Histogram>[];
      expect(latency.reduce((n, p) => n + p.value.count, 0)).toBe(4);
      expect(metrics.get('hive.inbox.depth')!.dataPoints.find((p) => p.attributes['agent.id'] === 'client')?.value).toBe(1);
      expect(metrics.has('hive.messages.delivered')).toBe(true);
    } finally {
      await hive.close();
    }
    await until(() => exporter.getFinishedSpans().length >= CHAIN_SPANS, `all spans relayed from the workers (have ${exporter.getFinishedSpans().length})`);
    assertChain(exporter.getFinishedSpans().map(fromSdk), firstId);
  }, 60_000);

  it('OTLP/HTTP exporter: every worker exports to the configured endpoint; the chain is one trace', async () => {
    const received: S[] = [];
    let metricPosts = 0;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        if (req.url === '/v1/metrics') metricPosts += 1;
        if (req.url === '/v1/traces') {
          expect(req.headers['content-type']).toContain('application/json');
          received.push(...decodeOtlpJson(JSON.parse(body.toString('utf8'))));
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const hive = await startHive(fastConfig({ agents, telemetry: { otlpEndpoint: `http://127.0.0.1:${port}`, serviceName: 'hive-test', exportIntervalMs: 200 } }));
      const first = await hive.send({ from: 'client', to: 'forwarder', act: 'request', body: 'over http' });
      await waitFor(hive, () => readInbox(hive.root, 'client', 0).entries.length === 1, 'the answer reaches the client');
      await hive.close(); // flushes every worker's provider and the main one
      await until(
        () => received.length >= CHAIN_SPANS,
        () => `all spans at the receiver (have ${received.length}: ${received.map((s) => `${s.name}@${String(s.resource['hive.host'])}`).join(', ')})`,
      );
      expect(received.every((s) => s.resource['service.name'] === 'hive-test')).toBe(true);
      assertChain(received, first.id);
      expect(metricPosts).toBeGreaterThan(0);
    } finally {
      server.close();
    }
  }, 60_000);

  it('otelEnvFor gives a spawned provider the endpoint and the agent as resource attributes; nothing when off', () => {
    expect(otelEnvFor({ id: 'writer', name: 'The Writer' }, undefined)).toEqual({});
    const env = otelEnvFor({ id: 'writer', name: 'The Writer, v2' }, { otlpEndpoint: 'http://127.0.0.1:4318', serviceName: 'hive' }, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://127.0.0.1:4318');
    expect(env.OTEL_RESOURCE_ATTRIBUTES).toBe('agent.id=writer,agent.name=The%20Writer%2C%20v2,hive.service=hive');
    expect(env.TRACEPARENT).toMatch(/^00-/);
  });
});

/** OTLP JSON (ExportTraceServiceRequest) → spans; ids may be hex or base64. */
function decodeOtlpJson(body: { resourceSpans?: { resource?: { attributes?: KV[] }; scopeSpans?: { spans?: RawSpan[] }[] }[] }): S[] {
  const out: S[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({ name: s.name, traceId: hex(s.traceId), spanId: hex(s.spanId), parent: s.parentSpanId ? hex(s.parentSpanId) : null, attrs: attrs(s.attributes), resource });
      }
    }
  }
  return out;
}

interface KV {
  key: string;
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number; arrayValue?: { values: KV['value'][] } };
}
interface RawSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: KV[];
}

function attrs(list: KV[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue ?? value.arrayValue;
  return out;
}

function hex(id: string): string {
  if (/^[0-9a-f]+$/.test(id) && (id.length === 32 || id.length === 16)) return id;
  return Buffer.from(id, 'base64').toString('hex');
}
