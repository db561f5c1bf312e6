import { describe, expect, it } from 'vitest';
import { collectLines, startFixture } from './helpers/fixture.ts';

describe('the hive process ends when its command has', () => {
  it('a handle left open does not keep it alive: it exits with the command\'s code after the grace, naming what was open', async () => {
    const t0 = Date.now();
    const { exited } = collectLines(startFixture('lingering-handle.ts', []));
    const x = await exited;
    expect(x.code).toBe(3);
    expect(x.stderr).toMatch(/still running 0\.3 s after the command ended \(open: .*\); exiting/);
    expect(Date.now() - t0).toBeLessThan(15_000);
  });
});
