import { expect } from 'vitest';
import { parseConfig } from '../../src/config/schema.ts';

/** The E_BAD_CONFIG message a config gets; fails the test when the config is accepted. */
export function configProblem(input: unknown): string {
  try {
    parseConfig(input, '/base');
  } catch (err) {
    expect((err as { code: string }).code).toBe('E_BAD_CONFIG');
    return (err as Error).message;
  }
  throw new Error('config was accepted');
}
