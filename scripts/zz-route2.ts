import fs from 'node:fs';
import { ensureHive, ensureAgent } from '../src/layout/ensure.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { routeOnce, createDirectoryCache } from '../src/router/route.ts';
const root = fs.mkdtempSync('/tmp/hive-rt-') + '/hive';
await ensureHive(root); for (const id of ['e', 'client']) await ensureAgent(root, { id });
const base = createFsTransport(root); const dir = createDirectoryCache(root);
const times: Record<string, number[]> = {};
const wrap = (name: string, fn: any) => async (...a: any[]) => { const s = performance.now(); const r = await fn(...a); (times[name] ??= []).push(performance.now() - s); return r; };
const t = { ...base, pending: wrap('pending', base.pending), deliver: wrap('deliver', base.deliver), settle: wrap('settle', base.settle) };
const total: number[] = [];
for (let i = 0; i < 300; i++) {
  writeOutbox(root, [createMessage({ from: 'client', to: 'e', act: 'request', body: 'x' })]);
  const s = performance.now();
  await routeOnce({ root, transport: t, directory: dir(), senders: ['client'], settings: { hopCap: 12, batchPerSender: 256 } });
  total.push(performance.now() - s);
}
const med = (a: number[]) => a.slice(100).sort((x, y) => x - y)[100].toFixed(3);
console.log('total', med(total), Object.fromEntries(Object.entries(times).map(([k, v]) => [k, med(v)])));
const T = (globalThis as any).T.slice(100); const col = (i: number) => T.map((x: number[]) => x[i]).sort((a: number, b: number) => a - b)[100].toFixed(3);
console.log('place', col(0), 'dirsync', col(1));
