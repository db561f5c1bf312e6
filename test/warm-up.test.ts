import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.ts';
import { agentSettingsOf } from '../src/supervisor/agent-record.ts';
import { warmsUp, warmTurnPath } from '../src/agent/warm-up.ts';

const scratch = () => (fs.existsSync('/dev/shm') ? fs.readdirSync('/dev/shm') : []).filter((n) => n.startsWith('hive-warm-up-'));

describe("a worker's warm-up turn", () => {
  it('runs one turn of a scratch echo agent to its commit and leaves nothing behind', async () => {
    const before = scratch();
    const settings = agentSettingsOf(parseConfig({ root: '/tmp/not-used' }, '/base'));
    const ms = await warmTurnPath(settings);
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThan(0);
    expect(scratch()).toEqual(before);
  });

  it('is skipped only for a crash point or a planted bug (they would fire in the scratch turn), not for the fault ops every chaos and bench:scale run has', () => {
    expect(warmsUp(undefined)).toBe(true);
    expect(warmsUp({ faultOps: true })).toBe(true);
    expect(warmsUp({ fsyncDelayMs: 5 })).toBe(true);
    expect(warmsUp({ crashAt: 'commit.after-wal' })).toBe(false);
    expect(warmsUp({ faultOps: true, plant: 'no-idempotency' })).toBe(false);
  });
});
