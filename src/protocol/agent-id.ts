import { HiveError, describeValue } from '../errors.ts';

/** Agent ids are safe path segments (docs/architecture.md, "On-disk layout"). Checked before any path is built. */
export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Recipients that are not agent folders of their own. */
export const GOD_ID = 'god';
export const HUMAN_ALIAS = 'human';
export const BROADCAST = 'broadcast';

/** True when `value` is a syntactically valid agent id (`.`/`..` are not). */
export function isAgentId(value: unknown): value is string {
  return typeof value === 'string' && AGENT_ID_PATTERN.test(value) && value !== '.' && value !== '..';
}

/**
 * Throws `E_BAD_AGENT_ID` unless `value` is a valid agent id.
 * @example assertAgentId('alice') // ok
 * @example assertAgentId('../etc') // throws
 */
export function assertAgentId(value: unknown, where = 'agent id'): asserts value is string {
  if (!isAgentId(value)) {
    throw new HiveError(
      'E_BAD_AGENT_ID',
      `Expected ${where} to match ${AGENT_ID_PATTERN.source} (lower-case letters, digits, '.', '_', '-'; at most 64), got ${describeValue(value)}`,
      { details: { where, received: value } },
    );
  }
}

/** Names used by the runtime itself; no spawned agent may take them. */
export const RESERVED_IDS: ReadonlySet<string> = new Set([
  GOD_ID,
  HUMAN_ALIAS,
  BROADCAST,
  'router',
  'miner',
  'reflector',
  'supervisor',
  'hive',
]);

/** The sender id of notices the runtime writes (bounces, failures). */
export const SYSTEM_SENDER = 'hive';
