import { describe, expect, it } from 'vitest';
import { durabilityOf } from '../src/queue/cluster-durability.ts';

describe('cluster durability report', () => {
  it("Debian bookworm's nats-server 2.9.10 with one replica: warns about power loss and about the single copy", () => {
    const r = durabilityOf('2.9.10', 1);
    expect(r.warnings).toHaveLength(2);
    expect(r.warnings.join(' ')).toMatch(/2\.9\.10 flushes its store to disk periodically/);
    expect(r.warnings.join(' ')).toMatch(/1 replica: losing the NATS machine/);
    expect(r.survives[0]).toMatch(/crash of any Hive process/);
  });

  it('R3 on a server that can sync always: no warning, and it says what it survives', () => {
    const r = durabilityOf('v2.10.23', 3);
    expect(r.warnings).toEqual([]);
    expect(r.survives.join(' ')).toMatch(/loss of one of the 3 NATS machines/);
    expect(r.survives.join(' ')).toMatch(/sync_interval: always/);
  });

  it('R3 on 2.9.x also warns that its expected-sequence checks can race (two owners of one lease or one commit)', () => {
    const r = durabilityOf('2.9.10', 3);
    expect(r.warnings.some((w) => /nats-server#4320/.test(w))).toBe(true);
    expect(durabilityOf('2.10.0', 3).warnings.some((w) => /#4320/.test(w))).toBe(false);
    expect(durabilityOf('2.9.10', 1).warnings.some((w) => /#4320/.test(w))).toBe(false);
  });

  it('versions are compared as numbers (2.10.9 is older than 2.10.23; 2.11.0 is newer)', () => {
    expect(durabilityOf('2.10.9', 3).warnings).toHaveLength(1); // periodic flush only
    expect(durabilityOf('2.11.0', 3).warnings).toHaveLength(0);
    expect(durabilityOf('garbage', 3).warnings).toHaveLength(2); // an unknown version is taken as an old one
  });
});
