import { describe, expect, it } from 'vitest';
import { markerCount } from '../src/chaos/machine-invariants.ts';

describe('the machine chaos memory check', () => {
  it('counts a marker only as a line of its own, never inside a longer one', () => {
    const memory = '# r\n\n## Memories\n\n### Chaos note\nchaos-memory-5-30\n\n### Chaos note\nchaos-memory-5-300\n';
    expect(markerCount(memory, 'chaos-memory-5-30')).toBe(1);
    expect(markerCount(memory, 'chaos-memory-5-300')).toBe(1);
    expect(markerCount(`${memory}### Chaos note\nchaos-memory-5-30\n`, 'chaos-memory-5-30')).toBe(2);
    expect(markerCount(memory, 'chaos-memory-5-3')).toBe(0);
  });
});
