import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { ensureHive } from '../src/layout/ensure.ts';
import { appendEvent } from '../src/log/event-log.ts';
import { rotateLogIfNeeded } from '../src/log/rotate.ts';
import { listRotatedLogs } from '../src/log/files.ts';
import { readLog } from '../src/log/read.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';

async function until(check: () => boolean, label: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('event log', () => {
  it('rotates at its cap, keeps `keep` files, and `hive log --json` reads across rotations in order', async () => {
    const root = tempRoot();
    await ensureHive(root);
    fs.writeFileSync(path.join(root, 'log.jsonl'), '');
    let n = 0;
    const rotated: string[] = [];
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 20; i++) appendEvent(root, { type: 'test.tick', n: n++, agent: n % 2 ? 'odd' : 'even' });
      expect(await rotateLogIfNeeded(root, { maxBytes: 1_000_000, keep: 3 })).toBeNull(); // below the cap
      const file = await rotateLogIfNeeded(root, { maxBytes: 500, keep: 3 });
      expect(file).not.toBeNull();
      rotated.push(path.basename(file!));
    }
    for (let i = 0; i < 7; i++) appendEvent(root, { type: 'test.tick', n: n++, agent: n % 2 ? 'odd' : 'even' });
    expect(rotated).toEqual(['log-000001.jsonl', 'log-000002.jsonl', 'log-000003.jsonl', 'log-000004.jsonl', 'log-000005.jsonl']);
    expect(listRotatedLogs(root).map((r) => path.basename(r.file))).toEqual(['log-000003.jsonl', 'log-000004.jsonl', 'log-000005.jsonl']);

    const out = memoryIO();
    expect(await runCli(['log', '--root', root, '--json'], out.io)).toBe(0);
    const ticks = jsonLines(out.stdout).filter((e) => e.type === 'test.tick').map((e) => e.n);
    // Files 1 and 2 (40 events) were pruned; the rest is there once, in order.
    expect(ticks).toEqual(Array.from({ length: n - 40 }, (_, i) => i + 40));
    expect(jsonLines(out.stdout).filter((e) => e.type === 'log.rotated').length).toBeGreaterThan(0);

    const odd = memoryIO();
    await runCli(['log', '--root', root, '--json', '--agent', 'odd'], odd.io);
    const oddLines = jsonLines(odd.stdout);
    expect(oddLines.length).toBeGreaterThan(0); // `every` over nothing would pass
    expect(oddLines.every((e) => e.agent === 'odd')).toBe(true);
    const text = memoryIO();
    await runCli(['log', '--root', root], text.io);
    expect(text.stdout).toMatch(/test\.tick\s+(odd|even)\s+\{"n":\d+\}/);
  });

  it('the supervisor rotates log.jsonl at config.log.maxBytes while workers write to it', async () => {
    const hive = await startHive(
      fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }], log: { maxBytes: 4_000, keep: 50, checkMs: 50 } }),
    );
    // Three rounds of 20 request/reply pairs (~7 KB of events each): after each round the
    // supervisor's periodic check must rotate again. (send() blocks the main thread while it
    // writes, so the rounds give the rotator's timer its turn.)
    const replies = () => readLog(hive.root).filter((e) => e.type === 'message.routed' && e.from === 'echo').length;
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < 20; i++) await hive.send({ from: 'client', to: 'echo', act: 'request', body: `m${round}-${i}` });
      await waitFor(hive, () => replies() === 20 * round, `round ${round} replied`, 45_000);
      await waitFor(hive, () => listRotatedLogs(hive.root).length >= round, `rotation ${round}`, 45_000);
    }
    const events = readLog(hive.root);
    const routed = events.filter((e) => e.type === 'message.routed' && e.from === 'client').map((e) => e.id);
    expect(new Set(routed).size).toBe(60);
    expect(routed.length).toBe(60);
    for (const r of listRotatedLogs(hive.root)) expect(fs.statSync(r.file).size).toBeLessThan(4_000 + 64 * 1024);
    // Each committed turn has its line, across the rotations: what it handled and sent, and
    // how long its inbox read, its brain and its commit took.
    const turns = () => readLog(hive.root).filter((e) => e.type === 'actor.turn' && e.agent === 'echo');
    await waitFor(hive, () => turns().flatMap((t) => t.handled as string[]).length === 60, 'every turn logged', 45_000);
    expect(new Set(turns().flatMap((t) => t.handled as string[]))).toEqual(new Set(routed));
    for (const t of turns()) for (const k of ['fetch_ms', 'think_ms', 'commit_ms']) expect(Number.isInteger(t[k]) && (t[k] as number) >= 0, `${k} of ${JSON.stringify(t)}`).toBe(true);
  }, 120_000);

  it('hive log --follow prints new events and survives a rotation', async () => {
    const root = tempRoot();
    await ensureHive(root);
    appendEvent(root, { type: 'test.before' });
    const out = memoryIO();
    const done = runCli(['log', '--root', root, '--follow', '--json'], out.io);
    await until(() => out.stdout.includes('test.before'), 'the existing event');
    appendEvent(root, { type: 'test.a' });
    await until(() => out.stdout.includes('test.a'), 'an appended event');
    appendEvent(root, { type: 'test.b' });
    expect(await rotateLogIfNeeded(root, { maxBytes: 1, keep: 5 })).not.toBeNull();
    appendEvent(root, { type: 'test.c' });
    await until(() => out.stdout.includes('test.c'), 'an event after the rotation');
    out.interrupt();
    expect(await done).toBe(0);
    const types = jsonLines(out.stdout).map((e) => e.type);
    expect(types).toEqual(['test.before', 'test.a', 'test.b', 'log.rotated', 'test.c']);
  });
});
