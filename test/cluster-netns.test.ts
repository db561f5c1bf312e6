// `npm run test:cluster` as part of the suite: three machines, each in its own network
// namespace, on a three-node nats-server cluster with R3 streams; one machine SIGKILLed
// (supervisor and nats-server) under load and brought back, another cut off and healed
// (scripts/test-cluster.ts says how). Skipped where namespaces cannot be made (not root, no
// `ip`) or nats-server is missing, the reason in its title. Mostly waits (the cut lasts 8 s,
// leases run out), so it runs beside the other files.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
  failover?: { held: boolean; h3HeldBeforeKill: number; takenOverBeforeReturn: number };
  error?: string;
}

const unavailable = natsUnavailable() ?? MachineNetwork.unavailable();
/** The script's own limit: under it, a run that hangs still prints where it stood (and cleans up) before the test's timeout. */
const LIMIT_MS = 200_000;

// Skipped, the title says why (the reason is the script's own check).
describe.skipIf(unavailable !== null)(`a hive over three machines in network namespaces (test:cluster)${unavailable ? `: skipped, ${unavailable}` : ''}`, () => {
  let child: ChildProcess | null = null;
  afterEach(() => {
    // It cleans up on SIGTERM (its machines, namespaces and folders).
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    child = null;
  });

  it('a machine killed and back (its agents taken over meanwhile), another cut off and healed: 2,000 requests answered exactly once, states and memories as committed', async () => {
    const run = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'scripts', 'test-cluster.ts')], {
      cwd: REPO,
      env: { ...process.env, TEST_CLUSTER_LIMIT_MS: String(LIMIT_MS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = run;
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (d) => (stdout += String(d)));
    run.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-8000)));
    const code = await new Promise<number | null>((resolve) => run.once('close', resolve));
    let report: ClusterReport;
    try {
      report = JSON.parse(stdout) as ClusterReport;
    } catch {
      throw new Error(`test:cluster printed no report (exit ${code}):\n${stdout}\n${stderr}`);
    }
    const what = `${JSON.stringify(report, null, 2)}\n${stderr}`;
    expect(report.skipped, what).toBeUndefined();
    expect({ held: report.held, lost: report.lost, duplicated: report.duplicated, answered: report.answered, statesMatch: report.statesMatch, memory: report.memory?.held, failover: report.failover?.held }, what).toEqual({
      held: true,
      lost: 0,
      duplicated: 0,
      answered: report.requests,
      statesMatch: true,
      memory: true,
      failover: true,
    });
    expect(code).toBe(0);
  }, LIMIT_MS + 40_000);
});
