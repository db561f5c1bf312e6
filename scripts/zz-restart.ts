import fs from 'node:fs';
import path from 'node:path';
import { ChaosChild } from '../src/chaos/child.ts';
const work = fs.mkdtempSync('/tmp/hive-rs-');
const cfg = path.join(work, 'c.json');
fs.writeFileSync(cfg, JSON.stringify({ root: path.join(work, 'hive'), agents: ['a', 'b', 'c'].map((id) => ({ id, brain: { kind: 'module', module: path.resolve('scripts/chaos/brain.ts') } })) }));
const child = new ChaosChild(cfg, {});
console.log('first start ms', await child.start());
for (let i = 0; i < 3; i++) { await child.kill(); console.log('restart ms', await child.start()); }
await child.stop();
