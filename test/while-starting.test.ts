import { describe, expect, it } from 'vitest';
import { whileStarting } from '../src/queue/jetstream-transport.ts';

// A cluster electing its JetStream leader answers "temporarily unavailable" for a moment:
// opening the transport (a worker's start) must wait that out, not fail. Five failed starts
// in half a second made a machine give up on every agent it had just taken over.
describe('whileStarting', () => {
  it('tries again while JetStream says it is temporarily unavailable, then returns', async () => {
    let calls = 0;
    const got = await whileStarting(async () => {
      calls += 1;
      if (calls < 3) throw new Error('JetStream system temporarily unavailable');
      return 'opened';
    });
    expect(got).toBe('opened');
    expect(calls).toBe(3);
  });

  it('does not try again on a mistake (a bad stream config fails at once)', async () => {
    let calls = 0;
    await expect(
      whileStarting(async () => {
        calls += 1;
        throw new Error('stream name is required');
      }),
    ).rejects.toThrow(/stream name is required/);
    expect(calls).toBe(1);
  });
});
