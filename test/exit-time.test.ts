// Prompt exit: nothing Hive starts (timers, sockets, workers, git, the inspector) keeps a
// process alive after close. A script exits as soon as `await hive.close()` returns, and
// `hive start` exits right after it prints that it stopped.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';

const REPO = path.resolve(import.meta.dirname, '..');

describe('prompt exit', () => {
  it('a script exits within 1 s of hive.close() returning (4 agents, default config)', async () => {
    const root = path.join(tempDir(), 'hive');
    let closedAt = 0;
    const child = startFixture('close-exit.ts', [root]);
    const run = collectLines(child, (l) => {
      if (l === 'closed') closedAt = performance.now();
    });
    const result = await run.exited;
    const exitMs = performance.now() - closedAt;
    expect(result.code, result.stderr).toBe(0);
    expect(closedAt).toBeGreaterThan(0);
    process.stdout.write(`exit-time: script exited ${Math.round(exitMs)} ms after close() returned\n`);
    expect(exitMs).toBeLessThan(1_000);
  }, 60_000);

  it('hive start exits within 1 s of printing that it stopped, on SIGINT', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'hive.config.json');
    fs.writeFileSync(config, JSON.stringify({ root: './hive', agents: Array.from({ length: 4 }, (_, i) => ({ id: `echo-${i}`, brain: { kind: 'echo' } })) }));
    const child = spawn(process.execPath, [path.join(REPO, 'bin', 'hive.mjs'), 'start', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stoppedAt = 0;
    let stderr = '';
    const out = readline.createInterface({ input: child.stdout });
    const ready = new Promise<void>((resolve) => out.on('line', (l) => l.startsWith('hive ready') && resolve()));
    // `hive: stopped` is a status line: on stderr, like the rest of what hive start says about itself.
    readline.createInterface({ input: child.stderr }).on('line', (l) => {
      stderr += `${l}\n`;
      if (l === 'hive: stopped') stoppedAt = performance.now();
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    await ready;
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(0);
    expect(stoppedAt, 'the stopped line').toBeGreaterThan(0);
    const exitMs = performance.now() - stoppedAt;
    process.stdout.write(`exit-time: hive start exited ${Math.round(exitMs)} ms after its stopped line\n`);
    expect(exitMs).toBeLessThan(1_000);
  }, 60_000);
});
