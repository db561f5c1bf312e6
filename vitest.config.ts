import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the slowest test files took in a full run on 2 cores (2026-12-07, 500 s in
 * all). A clean checkout (CI) has no timings cached, and vitest then starts the largest files
 * first: the 71 s chaos run started at 427 s and ended the suite alone, one worker idle. The
 * slow ones go first, longest first, so that the two workers end together; the rest keep
 * vitest's order. A file missing here only runs in that order: update the figures when a file
 * becomes slow.
 */
const SLOW_FILES: Record<string, number> = {
  'cluster.test.ts': 76,
  'chaos.test.ts': 71,
  'crash-windows.test.ts': 68,
  'machine-kill.test.ts': 64,
  'package.test.ts': 56,
  'hostile.test.ts': 51,
  'promises.test.ts': 38,
  'cli-conventions.test.ts': 31,
  'sessions.test.ts': 27,
  'inspector.test.ts': 22,
  'supervisor-kill.test.ts': 22,
  'presets.test.ts': 21,
  'git-runner.test.ts': 19,
  'machine-agent.test.ts': 16,
  'providers.test.ts': 16,
  'runtime.test.ts': 16,
  'send-kill.test.ts': 15,
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
