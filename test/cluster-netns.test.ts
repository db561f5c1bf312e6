// `npm run test:cluster` as part of the suite: three machines, each in its own network
// namespace, on a three-node nats-server cluster with R3 streams; one machine SIGKILLed
// (supervisor and nats-server) under load and brought back, another cut off and healed
// (scripts/test-cluster.ts says how). Skipped where namespaces cannot be made (not root, no
// `ip`) or nats-server is missing. Mostly waits (the cut lasts 8 s, leases run out), so it
// runs beside the other files.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MachineNetwork } from '../src/chaos/netns.ts';
import { natsUnavailable } from './helpers/nats-server.ts';
import { REPO } from './helpers/fixture.ts';

interface ClusterReport {
  held?: boolean;
  skipped?: string;
  requests?: number;
  answered?: number;
  lost?: number;
  duplicated?: number;
  statesMatch?: boolean;
  memory?: { held: boolean };
  error?: string;
}

const unavailable = natsUnavailable() ?? MachineNetwork.unavailable();

describe.skipIf(unavailable !== null)('a hive over three machines in network namespaces (test:cluster)', () => {
  it('a machine killed and back, another cut off and healed: 2,000 requests answered exactly once, states and memories as committed', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'scripts', 'test-cluster.ts')], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-8000)));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    let report: ClusterReport;
    try {
      report = JSON.parse(stdout) as ClusterReport;
    } catch {
      throw new Error(`test:cluster printed no report (exit ${code}):\n${stdout}\n${stderr}`);
    }
    const what = `${JSON.stringify(report, null, 2)}\n${stderr}`;
    expect(report.skipped, what).toBeUndefined();
    expect({ held: report.held, lost: report.lost, duplicated: report.duplicated, answered: report.answered, statesMatch: report.statesMatch, memory: report.memory?.held }, what).toEqual({
      held: true,
      lost: 0,
      duplicated: 0,
      answered: report.requests,
      statesMatch: true,
      memory: true,
    });
    expect(code).toBe(0);
  }, 240_000);
});
