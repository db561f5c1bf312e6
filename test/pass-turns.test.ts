import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { PassTurns } from '../src/router/pass-turns.ts';

/**
 * A run of `passes` passes as the router machine chains them (each next one started from
 * the last one's promise), each ~1 ms of synchronous work like a pass's file system calls.
 * `state.pass`: the pass under way (`passes` once the run ended).
 */
async function run(turns: PassTurns | null, passes: number, state: { pass: number }, onFirst: () => void): Promise<void> {
  for (let i = 0; i < passes; i++) {
    await turns?.before();
    state.pass = i;
    if (i === 0) onFirst();
    const end = performance.now() + 1;
    while (performance.now() < end);
    turns?.after(i < passes - 1);
  }
  state.pass = passes;
}

/** The pass under way when a message posted during the first pass was heard. */
async function heardDuring(turns: PassTurns | null): Promise<number> {
  const { port1, port2 } = new MessageChannel();
  const state = { pass: -1 };
  const heard = new Promise<number>((resolve) => port1.once('message', () => resolve(state.pass)));
  await run(turns, 16, state, () => port2.postMessage('kick'));
  const at = await heard;
  port1.close();
  return at;
}

describe("the router thread's event loop between passes", () => {
  it('a message posted during a run of passes (an agent host\'s kick with a reply) is heard after the pass under way, not after the run', async () => {
    expect(await heardDuring(null)).toBe(16); // without the turns: only once the whole run ended
    expect(await heardDuring(new PassTurns())).toBeLessThanOrEqual(2);
  });

  it('a pass after one that left nothing starts at once (no turn of the event loop first)', async () => {
    const turns = new PassTurns();
    turns.after(false);
    let immediate = false;
    setImmediate(() => (immediate = true));
    await turns.before();
    expect(immediate).toBe(false);
    turns.after(true);
    await turns.before();
    expect(immediate).toBe(true);
  });
});
