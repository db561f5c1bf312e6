import fs from 'node:fs';
import path from 'node:path';
import { ChaosChild } from '../src/chaos/child.ts';
const work = fs.mkdtempSync('/tmp/hive-rs-');
const cfg = path.join(work, 'c.json');
const root = path.join(work, 'hive');
fs.writeFileSync(cfg, JSON.stringify({ root, supervisor: { agentsPerWorker: 25 }, memory: { enabled: false }, agents: Array.from({ length: 100 }, (_, i) => ({ id: `e${i}`, brain: { kind: 'echo' } })) }));
const child = new ChaosChild(cfg, {});
console.log('first start ms', await child.start());
for (let i = 0; i < 2; i++) { await child.kill(); const t0 = Date.now(); await child.start(); console.log('restart ms', Date.now() - t0); }
await child.stop();
for (const l of fs.readFileSync(root + '/log.jsonl', 'utf8').split('\n')) if (l.includes('hive.started')) console.log(JSON.parse(l).phases_ms);
