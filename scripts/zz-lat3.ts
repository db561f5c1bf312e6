import fs from 'node:fs';
import { createHive } from '../src/hive.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
const root = fs.mkdtempSync('/tmp/hive-lat-') + '/hive';
const hive = createHive({ root, agents: [{ id: 'e', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }] });
await hive.start();
const rows: number[][] = [];
for (let i = 0; i < 400; i++) {
  const m = createMessage({ from: 'client', to: 'e', act: 'request', body: 'x' });
  let t0 = 0; let tDel = 0;
  const offD = hive.on('delivered', (d) => { if (d.id === m.id) tDel = performance.now(); });
  const done = new Promise<number[]>((r) => { const off = hive.on('processed', (p) => { if (p.handled.some((h) => h.id === m.id)) { off(); r([tDel - t0, performance.now() - t0, p.timings.fetchMs, p.timings.thinkMs, p.timings.commitMs, ...(p.timings as any).parts]); } }); });
  writeOutbox(root, [m]); t0 = performance.now();
  hive.supervisor.kickRouter(['client']);
  rows.push(await done); offD();
  await new Promise((r) => setTimeout(r, 3));
}
const med = (i: number) => rows.slice(100).map((r) => r[i]).sort((a, b) => a - b)[150].toFixed(2);
console.log('delivered@main', med(0), 'processed@main', med(1), 'fetch', med(2), 'think', med(3), 'commit', med(4), 'parts debt/wal/outbox/done', med(5), med(6), med(7), med(8));
await hive.close();
