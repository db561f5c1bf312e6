import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { InboxWriter } from '../src/queue/inbox-writer.ts';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage, type HiveMessage } from '../src/protocol/message.ts';
import { SendLog, SendLogSource, readSendRouted } from '../src/queue/send-log.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { listSegments } from '../src/queue/inbox-log.ts';

const msg = (i: number): HiveMessage => createMessage({ from: 'client', to: 'echo', act: 'request', body: `request ${i}` });

async function hive() {
  const root = tempRoot();
  await ensureHive(root);
  await ensureAgent(root, { id: 'client' });
  await ensureAgent(root, { id: 'echo' });
  return root;
}

/** Every message the router would route from client's send log, settling as it goes. */
function drain(root: string): HiveMessage[] {
  const source = new SendLogSource(root);
  const out: HiveMessage[] = [];
  for (;;) {
    const items = source.pending('client', 100);
    if (items.length === 0) break;
    for (const i of items) if (i.message) out.push(i.message);
    source.settle('client', items.map((i) => i.ref));
  }
  source.close();
  return out;
}

describe('the send log (hive.send without a file per message)', () => {
  it('500 concurrent sends share group commits, are read in order once, and stay routed after a restart', async () => {
    const root = await hive();
    const log = new SendLog(root);
    const sent = Array.from({ length: 500 }, (_, i) => msg(i));
    const appends = vi.spyOn(InboxWriter.prototype, 'append');
    await Promise.all(sent.map((m) => log.append([m])));
    // Group commits: the sends queued during a flush go in the next one (one per send without it).
    expect(appends.mock.calls.length).toBeLessThan(20);
    appends.mockRestore();
    // No outbox file at all: one segment of 500 lines.
    expect(fs.readdirSync(agentPaths(root, 'client').outbox).filter((n) => n.endsWith('.json'))).toEqual([]);
    expect(listSegments(agentPaths(root, 'client').sendLog).segments).toHaveLength(1);
    expect(drain(root).map((m) => m.id)).toEqual(sent.map((m) => m.id));
    expect(readSendRouted(root, 'client')).toBe(500);
    // A new reader (the router after a restart) finds nothing left to route.
    expect(drain(root)).toEqual([]);
    // A message sent again with the same id is accepted and not logged twice.
    await log.append([sent[0]!]);
    expect(drain(root)).toEqual([]);
    await log.close();
  });

  it('a torn tail at every byte offset of the last entry is cut at recovery: every acknowledged send stays, seqs stay gap-free', async () => {
    const root = await hive();
    let log = new SendLog(root);
    const kept = [msg(1), msg(2)];
    await log.append(kept);
    log.close();
    const seg = listSegments(agentPaths(root, 'client').sendLog).segments[0]!.file;
    const pristine = fs.readFileSync(seg);
    // What a third, unacknowledged send would have left when cut short at each byte.
    const probe = await hive();
    const p = new SendLog(probe);
    await p.append([...kept, msg(3)]);
    p.close();
    const third = fs.readFileSync(listSegments(agentPaths(probe, 'client').sendLog).segments[0]!.file).subarray(pristine.length);
    for (let cut = 1; cut < third.length; cut++) {
      fs.writeFileSync(seg, Buffer.concat([pristine, third.subarray(0, cut)]));
      log = new SendLog(root);
      await log.recover(['client']);
      expect(fs.readFileSync(seg).length).toBe(pristine.length);
      log.close();
    }
    log = new SendLog(root);
    const next = msg(4);
    await log.append([next]);
    log.close();
    expect(drain(root).map((m) => m.id)).toEqual([...kept, next].map((m) => m.id));
  });

  it('a sender killed (SIGKILL) amid concurrent sends leaves every acknowledged message in its log, once', async () => {
    const root = await hive();
    const child = startFixture('sendlog-writer.ts', [root, 'client', '2000']);
    const killAt = 300 + (Date.now() % 700);
    const { lines, exited } = collectLines(child, () => {
      if (lines.length >= killAt && !child.killed) child.kill('SIGKILL');
    });
    const result = await exited;
    expect(result.signal).toBe('SIGKILL');
    const acked = [...lines];
    const log = new SendLog(root);
    await log.recover(['client']);
    log.close();
    const ids = drain(root).map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    const logged = new Set(ids);
    for (const id of acked) expect(logged.has(id)).toBe(true);
    // At most the batches in flight are in the log without their acknowledgement.
    expect(ids.length - acked.length).toBeLessThanOrEqual(40);
  });

  it('the routed mark moves only over a run without holes, and a junk .routed reads as nothing routed (never stops the sender)', async () => {
    const root = await hive();
    const log = new SendLog(root);
    await log.append([msg(1), msg(2), msg(3)]);
    const source = new SendLogSource(root);
    expect(source.pending('client', 10).map((i) => i.ref)).toEqual(['#1', '#2', '#3']);
    source.settle('client', ['#2', '#3']); // #1's reject failed: it must come back
    expect(readSendRouted(root, 'client')).toBe(0);
    expect(source.pending('client', 10).map((i) => i.ref)).toEqual(['#1', '#2', '#3']);
    source.settle('client', ['#1']);
    expect(readSendRouted(root, 'client')).toBe(3);
    source.close();
    for (const junk of ['', 'not json', '{"seq":"x"}']) {
      fs.writeFileSync(path.join(agentPaths(root, 'client').sendLog, '.routed'), junk);
      expect(readSendRouted(root, 'client')).toBe(0);
      expect(drain(root)).toHaveLength(3);
    }
    await log.close();
    await new SendLog(root).recover(['client']); // starts with a junk mark too
  });

  it('the filesystem transport hands send log entries to the router beside outbox files, and a bad line goes to dead-letter', async () => {
    const root = await hive();
    const log = new SendLog(root);
    await log.append([msg(1)]);
    log.close();
    // A line that is not a valid entry after it (a garbled disk, an edit by hand), then .synced moved over it.
    const dir = agentPaths(root, 'client').sendLog;
    const seg = listSegments(dir).segments[0]!.file;
    fs.appendFileSync(seg, '{"seq":2,"sum":"0000000000000000","message":{"id":"x"}}\n');
    fs.writeFileSync(path.join(dir, '.synced'), '{"seq":2}\n');
    const t = createFsTransport(root);
    const items = await t.pending('client', 10);
    expect(items.map((i) => i.ref)).toEqual(['#1', '#2']);
    expect(items[0]!.message?.body).toBe('request 1');
    expect(items[1]!.message).toBeNull();
    await t.settle('client', ['#1']);
    await t.reject('client', '#2', { error: items[1]!.error!.message, code: 'E_BAD_MESSAGE', source: 'agents/client/sendlog (entry 2)' });
    expect(await t.pending('client', 10)).toEqual([]);
    const dead = fs.readdirSync(path.join(root, 'dead-letter')).filter((n) => n.startsWith('sendlog-client-2'));
    expect(dead.length).toBeGreaterThan(0);
    t.close();
  });
});
