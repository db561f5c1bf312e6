import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.ts';
import { configProblem } from './helpers/config.ts';

const ok = { root: './hive', agents: [] };


describe('observability config', () => {
  it('defaults: no telemetry, log rotation at 10 MiB keeping 5, audit every 3 s, inspector on a random port', () => {
    const c = parseConfig(ok, '/base');
    expect(c.telemetry).toBeUndefined();
    expect(c.log).toEqual({ maxBytes: 10 * 1024 * 1024, keep: 5, checkMs: 1_000 });
    expect(c.audit).toEqual({ enabled: true, intervalMs: 3_000 });
    expect(c.inspector).toEqual({ enabled: true, port: 0 });
    expect(parseConfig({ ...ok, telemetry: { otlpEndpoint: 'http://127.0.0.1:4318' } }, '/base').telemetry).toEqual({
      otlpEndpoint: 'http://127.0.0.1:4318',
      serviceName: 'hive',
      exportIntervalMs: 1_000,
    });
  });

  it('telemetry.otlpEndpoint: must be a URL', () => {
    expect(configProblem({ ...ok, telemetry: { otlpEndpoint: 'localhost 4318' } })).toContain('Expected `telemetry.otlpEndpoint` to be a URL such as http://127.0.0.1:8080/v1, got "localhost 4318" (string)');
  });

  it('telemetry: unknown keys are refused', () => {
    expect(configProblem({ ...ok, telemetry: { otlpEndpoint: 'http://x:1', endpoint: 'y' } })).toContain('`telemetry` to be no unknown keys (found "endpoint")');
  });

  it('log.maxBytes and log.keep: positive integers', () => {
    expect(configProblem({ ...ok, log: { maxBytes: 0 } })).toContain('Expected `log.maxBytes` to be a positive number, got 0 (number)');
    expect(configProblem({ ...ok, log: { keep: 1.5 } })).toContain('`log.keep`');
  });

  it('audit.intervalMs: a positive integer; inspector.port: 0..65535', () => {
    expect(configProblem({ ...ok, audit: { intervalMs: -5 } })).toContain('Expected `audit.intervalMs` to be a positive number, got -5 (number)');
    expect(configProblem({ ...ok, inspector: { port: 70_000 } })).toContain('Expected `inspector.port` to be at most 65535, got 70000 (number)');
  });
});
