import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { spawn } from 'node:child_process';
import { connect } from '@nats-io/transport-node';
import { createMessage } from '../src/protocol/message.ts';
import { createJetStreamTransport } from '../src/queue/jetstream-transport.ts';
import { startNatsServer } from '../test/helpers/nats-server.ts';
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'trace-'));
const server = await startNatsServer({ storeDir: path.join(base, 'nats') });
const prefix = 'tr';
function start(root: string, host: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/cluster-host.ts', root, server.url, prefix, host, 'bench'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise<any>((res) => child.stdout!.on('data', (d) => String(d).includes('ready') && res(child)));
}
const ms = [await start(path.join(base, 'h1'), 'h1'), await start(path.join(base, 'h2'), 'h2')];
const nc = await connect({ servers: [server.url] });
const t0 = new Map<string, number>(); const events: Record<string, [string, number][]> = {};
nc.subscribe(`${prefix}.>`, { callback: (_e, m) => {
  const now = performance.now();
  let id = ''; try { const j = m.json<any>(); id = j.id ?? j.in_reply_to ?? j.messages?.[0]?.in_reply_to ?? ''; if (j.in_reply_to) id = j.in_reply_to; } catch {}
  for (const k of t0.keys()) if (id === k || (m.string().includes(k))) (events[k] ??= []).push([m.subject, now - t0.get(k)!]);
}});
const sender = await createJetStreamTransport({ servers: [server.url], prefix });
const rows: any[] = [];
for (let i = 0; i < 60; i++) {
  const to = `echo-${4 + (i % 4)}`;
  const msg = createMessage({ from: 'client', to, act: 'request', body: 'x' });
  t0.set(msg.id, performance.now());
  await sender.send([msg]);
  const ack = performance.now() - t0.get(msg.id)!;
  const until = performance.now() + 2000;
  while (!(events[msg.id] ?? []).some(([s]) => s.endsWith('inbox.client')) && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
  rows.push({ ack: ack.toFixed(1), ev: (events[msg.id] ?? []).map(([s, t]) => `${s.replace(prefix + '.', '')}@${t.toFixed(1)}`).join(' ') });
  await new Promise((r) => setTimeout(r, 20));
}
for (const r of rows.slice(20)) console.log(r.ack, r.ev);
for (const c of ms) c.kill('SIGTERM'); await nc.close(); sender.close(); await new Promise((r) => setTimeout(r, 1500)); await server.stop();
