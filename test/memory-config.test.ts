import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.ts';

function problem(memory: unknown): string {
  try {
    parseConfig({ root: './hive', memory }, '/base');
  } catch (err) {
    expect((err as { code: string }).code).toBe('E_BAD_CONFIG');
    return (err as Error).message;
  }
  throw new Error('config was accepted');
}

describe('memory config', () => {
  it('defaults: 10-minute schedule, 16 KiB / 64 KiB / 50 entries thresholds, MemPalace when installed', () => {
    const m = parseConfig({ root: './hive' }, '/base').memory;
    expect(m).toMatchObject({ enabled: true, mineEveryMs: 600_000, growBytes: 4_096, ignore: [], poolThreads: 1 });
    expect(m.condense).toEqual({ minBytes: 16_384, maxBytes: 65_536, maxEntries: 50, keepRecent: 10, targetBytes: 32_768, backupsKeep: 5, checkEveryMs: 60_000 });
    expect(m.mempalace).toEqual({ enabled: true, args: [], mineTimeoutMs: 120_000, searchTimeoutMs: 10_000 });
    expect(m.summarizer).toBeUndefined();
    const s = parseConfig({ root: './hive', memory: { summarizer: { command: 'llm' } } }, '/base').memory.summarizer;
    expect(s).toEqual({ command: 'llm', args: [], timeoutMs: 120_000 });
  });

  it('memory.mineEveryMs: a positive integer', () => {
    expect(problem({ mineEveryMs: -5 })).toContain('Expected `memory.mineEveryMs` to be a positive number, got -5 (number)');
    expect(problem({ mineEveryMs: 1.5 })).toContain('Expected `memory.mineEveryMs` to be an integer, got 1.5 (number)');
  });

  it('memory.condense.minBytes: at most maxBytes; targetBytes below maxBytes', () => {
    expect(problem({ condense: { minBytes: 100_000 } })).toContain('Expected `memory.condense.minBytes` to be at most `memory.condense.maxBytes` (65536), got 100000 (number)');
    expect(problem({ condense: { targetBytes: 70_000 } })).toContain('Expected `memory.condense.targetBytes` to be less than `memory.condense.maxBytes` (65536)');
  });

  it('memory.mempalace.command: a non-empty string; memory.summarizer.command: required', () => {
    expect(problem({ mempalace: { command: '' } })).toContain('Expected `memory.mempalace.command` to be a non-empty string');
    expect(problem({ summarizer: {} })).toContain('Expected `memory.summarizer.command` to be a string, got nothing');
  });

  it('memory.poolThreads: at most 16; unknown keys are named', () => {
    expect(problem({ poolThreads: 64 })).toContain('`memory.poolThreads` to be at most 16');
    expect(problem({ minEveryMs: 5 })).toContain('Expected `memory` to be no unknown keys (found "minEveryMs")');
    expect(problem({ ignore: 'x' })).toContain('Expected `memory.ignore` to be an array');
  });
});
