import fs from 'node:fs';
import path from 'node:path';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hivePaths } from '../layout/paths.ts';
import { assertAgentId } from '../protocol/agent-id.ts';
import { readRegularText } from '../fs/regular-file.ts';

/**
 * Per-agent secrets for the hooks socket: anything that can reach `hooks.sock` could
 * otherwise act as any agent (read and ack its inbox, god's included). An agent's token
 * is HMAC-SHA256(hive key, agent id); the key is `<root>/hive.key` (random, mode 0600),
 * so a token can be checked and handed out again without storing one per agent, and
 * only whoever can read the hive's own files can mint one.
 *
 * Hive gives the agents it starts their token in `HIVE_AGENT_TOKEN`; `hive hook` sends it
 * as `agent_token`; an agent run outside gets its token from `hive spawn` or `hive token`.
 */

export const AGENT_TOKEN_ENV = 'HIVE_AGENT_TOKEN';

/** The hive key's file. */
export function hiveKeyFile(root: string): string {
  return path.join(hivePaths(root).root, 'hive.key');
}

const keys = new Map<string, Buffer>();

/** Creates the hive key once (owner-only); an existing key is kept. */
export function ensureHiveKey(root: string): void {
  const file = hiveKeyFile(root);
  if (fs.existsSync(file)) return;
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(temp, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 } /* a secret: owner-only even in a group-shared hive */);
  try {
    fs.linkSync(temp, file); // never over a key another process made meanwhile
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

function hiveKey(root: string): Buffer {
  const file = hiveKeyFile(root);
  let key = keys.get(file);
  if (!key) {
    ensureHiveKey(root);
    const hex = readRegularText(file).text.trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${file} is not a hive key (64 hex digits); delete it to make a new one (agents started before then must be restarted)`);
    key = Buffer.from(hex, 'hex');
    if (keys.size >= 256) keys.clear();
    keys.set(file, key);
  }
  return key;
}

/**
 * The token of one agent of a hive.
 * @example process.env.HIVE_AGENT_TOKEN = agentToken(root, 'ext');
 */
export function agentToken(root: string, agentId: string): string {
  assertAgentId(agentId);
  return createHmac('sha256', hiveKey(root)).update(`hive-agent:${agentId}`).digest('hex');
}

/** True when `token` is the token of `agentId` (compared in constant time). */
export function isAgentToken(root: string, agentId: string, token: unknown): boolean {
  if (typeof token !== 'string' || !/^[0-9a-f]{64}$/.test(token)) return false;
  return timingSafeEqual(Buffer.from(agentToken(root, agentId), 'hex'), Buffer.from(token, 'hex'));
}
