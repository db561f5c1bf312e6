import { describe, expect, it } from 'vitest';
import { addRecent } from '../src/queue/recent-ids.ts';

describe("a deliverer's recent ids (src/queue/recent-ids.ts)", () => {
  it('keeps at least the newest twice-horizon ids and never more than twice the horizon + 1,000, however many are added', () => {
    const ids = new Set<string>();
    const horizon = 500;
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      addRecent(ids, `m${i}`, horizon);
      most = Math.max(most, ids.size);
      if (i >= 2 * horizon) expect(ids.has(`m${i - 2 * horizon + 1}`)).toBe(true); // within the horizon, twice over
    }
    expect(most).toBeLessThanOrEqual(2 * horizon + 1_000);
    expect(ids.has('m0')).toBe(false);
    expect(ids.has('m19999')).toBe(true);
  });
});
