import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the slowest test files took in a full run on 2 cores (2026-12-08, 485 s in
 * all; cluster-netns.test.ts beside four heavy files). A clean checkout (CI) has no timings
 * cached, and vitest then starts the largest files first: the 71 s chaos run started at
 * 427 s and ended the suite alone, one worker idle. The
 * slow ones go first, longest first, so that the two workers end together; the rest keep
 * vitest's order. A file missing here only runs in that order: update the figures when a file
 * becomes slow.
 */
const SLOW_FILES: Record<string, number> = {
  'package.test.ts': 118,
  'chaos.test.ts': 73,
  'hostile.test.ts': 69,
  'cluster.test.ts': 63,
  'cluster-netns.test.ts': 50,
  'cli-conventions.test.ts': 48,
  'machine-kill.test.ts': 44,
  'crash-windows.test.ts': 37,
  'sessions.test.ts': 29,
  'promises.test.ts': 29,
  'machine-agent.test.ts': 26,
  'presets.test.ts': 22,
  'supervisor-kill.test.ts': 21,
  'inspector.test.ts': 19,
  'runtime.test.ts': 17,
  'git-runner.test.ts': 16,
  'providers.test.ts': 14,
};

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (f: TestSpecification) => SLOW_FILES[f.moduleId.split('/').pop()!] ?? 0;
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a)); // stable: the rest keep their order
  }
}

/**
 * Two test files at a time even on a 2-core machine (vitest's default there is one: cores − 1).
 * Most of the suite's time is spent in files that wait (supervisors started and SIGKILLed,
 * deadlines, timers), so two overlap well: on 2 cores the suite took 421 s this way against
 * 595 s one file at a time (same machine, back to back), every test passing in both.
 */
export default defineConfig({
  test: {
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    sequence: { sequencer: SlowFirst },
    // The fixtures compiled once, before any test starts one (test/helpers/fixture-bundles.ts).
    globalSetup: ['test/global-setup.ts'],
  },
});
