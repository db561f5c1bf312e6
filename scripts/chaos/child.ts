// The hive under chaos, in its own process so the engine can SIGKILL it. Reads a config
// (JSON) and prints one JSON line per event the engine measures recovery with.
import fs from 'node:fs';
import { createHive } from '../../src/hive.ts';
import { parseConfig } from '../../src/config/schema.ts';

const file = process.argv[2]!;
const config = parseConfig(JSON.parse(fs.readFileSync(file, 'utf8')), process.cwd(), file);
const hive = createHive(config);
const say = (event: string, data: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ event, at: Date.now(), ...data })}\n`);
hive.on('crashed', (e) => say('crashed', { host: e.host, agents: e.agents, error: e.error }));
hive.on('restarted', (e) => say('restarted', { host: e.host, agents: e.agents }));
hive.on('failed', (e) => say('failed', { host: e.host, agents: e.agents, error: e.error }));
hive.on('dead-lettered', (e) => say('dead-lettered', { source: e.source, code: e.code ?? null }));
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  say('status', { actors: hive.status() });
  await hive.close();
  say('stopped');
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
await hive.start();
say('ready', { pid: process.pid });
