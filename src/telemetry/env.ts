import type { TelemetryConfig } from '../config/schema.ts';

/**
 * The OpenTelemetry environment of a spawned provider process (a command brain, an
 * LLM CLI): where to export, and resource attributes naming the agent, so its own
 * telemetry lands next to the hive's and can be grouped by agent. Values follow the
 * OTEL_RESOURCE_ATTRIBUTES format (W3C baggage: `key=value` pairs, comma-separated,
 * values percent-encoded). Empty when telemetry is off.
 * @example execa(cmd, args, { env: { ...process.env, ...otelEnvFor({ id: 'writer', name: 'Writer' }, config.telemetry) } })
 */
export function otelEnvFor(
  agent: { id: string; name?: string },
  telemetry: Pick<TelemetryConfig, 'otlpEndpoint' | 'serviceName'> | undefined | null,
  options: { traceparent?: string } = {},
): Record<string, string> {
  if (!telemetry) return {};
  const attrs: [string, string][] = [
    ['agent.id', agent.id],
    ['agent.name', agent.name ?? agent.id],
    ['hive.service', telemetry.serviceName],
  ];
  const env: Record<string, string> = {
    OTEL_EXPORTER_OTLP_ENDPOINT: telemetry.otlpEndpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_SERVICE_NAME: `${telemetry.serviceName}.${agent.id}`,
    OTEL_RESOURCE_ATTRIBUTES: attrs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join(','),
  };
  // The trace of the message being handled, for tools that continue it (env-carrier convention).
  if (options.traceparent) env.TRACEPARENT = options.traceparent;
  return env;
}
