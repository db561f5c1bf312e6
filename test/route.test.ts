import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths, hivePaths } from '../src/layout/paths.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { DEFAULT_ROUTER_SETTINGS, routeOnce } from '../src/router/route.ts';
import { listInbox, readInbox } from '../src/queue/inbox.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';
import { updateRegistry } from '../src/registry/registry.ts';

async function setup(...ids: string[]) {
  const root = tempRoot();
  await ensureHive(root);
  for (const id of ids) await ensureAgent(root, { id });
  // settleMs 0: these tests write whole files, so an unreadable one is final at once.
  const route = (settings = { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 }) => routeOnce({ root, transport: createFsTransport(root), settings });
  return { root, route };
}

function snapshotTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of fs.readdirSync(d)) {
      const f = path.join(d, n);
      if (fs.statSync(f).isDirectory()) walk(f);
      else out.push(`${path.relative(dir, f)}:${fs.readFileSync(f, 'utf8').length}`);
    }
  };
  walk(dir);
  return out.sort();
}

describe('routing and dead letters', () => {
  const bad: [string, string][] = [
    ['garbage JSON', '{ this is not json'],
    ['wrong field types', JSON.stringify({ from: 'alice', to: 'bob', act: 'inform', body: 42, hops: 'x' })],
    ['a `to` of ../../etc', JSON.stringify({ from: 'alice', to: '../../etc', act: 'inform', body: 'hi' })],
    ['a `from` of ../../etc', JSON.stringify({ from: '../../etc', to: 'bob', act: 'inform', body: 'hi' })],
  ];
  for (const [what, text] of bad) {
    it(`${what} ends in dead-letter with a reason; nothing else is touched`, async () => {
      const { root, route } = await setup('alice', 'bob');
      const file = path.join(agentPaths(root, 'alice').outbox, 'bad.json');
      fs.writeFileSync(file, text);
      const before = snapshotTree(path.join(root, 'agents', 'bob'));
      const report = await route();
      expect(report.rejected, JSON.stringify(report)).toHaveLength(1);
      expect(fs.existsSync(file)).toBe(false);
      const [dl] = listDeadLetters(root);
      expect(dl!.reason).toMatchObject({ source: 'agents/alice/outbox/bad.json', code: 'E_BAD_MESSAGE' });
      expect(dl!.reason!.error).toMatch(/Invalid message/);
      expect(fs.readFileSync(path.join(hivePaths(root).deadLetter, dl!.name), 'utf8')).toBe(text);
      expect(snapshotTree(path.join(root, 'agents', 'bob'))).toEqual(before);
      expect(fs.existsSync(path.join(root, '..', 'etc'))).toBe(false);
      const log = fs.readFileSync(hivePaths(root).log, 'utf8');
      expect(log).toContain('"type":"message.dead-lettered"');
      const god = readInbox(root, 'god', 0).entries;
      expect(god.map((e) => e.message.subject)).toEqual(['Undeliverable message from alice']);
    });
  }

  it('routes a hand-written munder-difflin file, moves it to .sent and logs the decision', async () => {
    const { root, route } = await setup('agent-42', 'agent-7');
    const file = path.join(agentPaths(root, 'agent-42').outbox, 'msg-001.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ id: 'msg-001', conversation: 'conv-1', from: 'agent-42', to: 'agent-7', act: 'request', subject: 'Need data', body: 'Please fetch.', hops: 0, requires_reply: true, needs_human: false, created_at: new Date().toISOString() }),
    );
    const report = await route();
    expect(report.delivered).toMatchObject([{ agent: 'agent-7', seq: 1, id: 'msg-001', from: 'agent-42', act: 'request', subject: 'Need data' }]);
    expect(fs.existsSync(path.join(agentPaths(root, 'agent-42').sent, 'msg-001.json'))).toBe(true);
    expect(fs.readFileSync(hivePaths(root).log, 'utf8')).toMatch(/"type":"message.routed".*"id":"msg-001"/);
  });

  it('canonical and hand-written outbox files both become normalised entries of the recipient\'s inbox log', async () => {
    const { root, route } = await setup('a', 'b');
    const m = createMessage({ from: 'a', to: 'b', act: 'inform', body: 'canonical' });
    writeOutbox(root, [m]);
    fs.writeFileSync(path.join(agentPaths(root, 'a').outbox, 'hand.json'), JSON.stringify({ id: 'hand-1', from: 'a', to: 'b', act: 'inform', body: 'by hand' }));
    await route();
    const lines = fs.readFileSync(path.join(agentPaths(root, 'b').inbox, '000000000001.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; message: Record<string, unknown> });
    expect(lines.map((l) => l.seq)).toEqual([1, 2]);
    expect(lines.map((l) => l.message.id).sort()).toEqual(['hand-1', m.id].sort());
    expect(lines.find((l) => l.message.id === 'hand-1')!.message).toMatchObject({ id: 'hand-1', conversation: 'hand-1', hops: 0, requires_reply: false });
  });

  it('a settle that fails leaves the items to route again, which delivers nothing twice (a SIGKILL there: crash-windows.test.ts)', async () => {
    const { root } = await setup('a', 'b');
    const msgs = Array.from({ length: 10 }, (_, i) => createMessage({ from: 'a', to: 'b', act: 'inform', body: String(i) }));
    writeOutbox(root, msgs);
    const t = createFsTransport(root);
    const failing = { ...t, settle: async () => { throw new Error('cannot move to .sent'); } };
    const first = await routeOnce({ root, transport: failing, settings: DEFAULT_ROUTER_SETTINGS });
    expect(first.delivered).toHaveLength(10);
    expect(first.refused).toEqual([{ sender: 'a', error: 'cannot move to .sent' }]);
    const report = await routeOnce({ root, transport: t, settings: DEFAULT_ROUTER_SETTINGS });
    expect(report.duplicates).toBe(10);
    expect(listInbox(root, 'b')).toHaveLength(10);
  });

  it('broadcast reaches everyone but the sender, god and archived agents', async () => {
    const { root, route } = await setup('a', 'b', 'c', 'old');
    await updateRegistry(root, (r) => {
      r.agents.old!.status = 'archived';
    });
    writeOutbox(root, [createMessage({ from: 'a', to: 'broadcast', act: 'inform', body: 'all hands' })]);
    const report = await route();
    expect(report.delivered.map((d) => d.agent).sort()).toEqual(['b', 'c']);
  });

  it('needs_human and human go to god', async () => {
    const { root, route } = await setup('a', 'b');
    writeOutbox(root, [
      createMessage({ from: 'a', to: 'b', act: 'query', body: 'approve?', needs_human: true }),
      createMessage({ from: 'a', to: 'human', act: 'query', body: 'hello people' }),
    ]);
    const report = await route();
    expect(report.delivered.map((d) => d.agent)).toEqual(['god', 'god']);
  });

  it('an unknown recipient is dead-lettered and bounced to god', async () => {
    const { root, route } = await setup('a');
    writeOutbox(root, [createMessage({ from: 'a', to: 'nobody', act: 'inform', body: 'hi' })]);
    const report = await route();
    expect(report.rejected[0]!.reason.code).toBe('E_UNKNOWN_AGENT');
    expect(readInbox(root, 'god', 0).entries[0]!.message.body).toContain('Unknown recipient "nobody"');
  });

  it('a message over the hop cap is stopped', async () => {
    const { root, route } = await setup('a', 'b');
    writeOutbox(root, [createMessage({ from: 'a', to: 'b', act: 'inform', body: 'loop', hops: 13 })]);
    const report = await route();
    expect(report.rejected[0]!.reason.code).toBe('E_HOP_CAP');
    expect(listInbox(root, 'b')).toEqual([]);
  });

  it('an unreadable file that is still fresh waits for its writer; then it is dead-lettered', async () => {
    const { root } = await setup('a', 'b');
    const file = path.join(agentPaths(root, 'a').outbox, 'typing.json');
    fs.writeFileSync(file, '{"from": "a", "to": "b", "act": "inf');
    const t = createFsTransport(root);
    const early = await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 60_000 } });
    expect(early).toMatchObject({ unsettled: 1, unsettledSenders: ['a'], rejected: [] }); // only a's outbox is looked at again
    fs.writeFileSync(file, JSON.stringify({ from: 'a', to: 'b', act: 'inform', body: 'finished' }));
    const done = await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 60_000 } });
    expect(done.delivered.map((d) => d.body)).toEqual(['finished']);
    fs.writeFileSync(path.join(agentPaths(root, 'a').outbox, 'broken.json'), '{ never finished');
    const late = await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    expect(late.rejected).toHaveLength(1);
  });

  it('a message claiming another sender is rejected', async () => {
    const { root, route } = await setup('a', 'b');
    fs.writeFileSync(path.join(agentPaths(root, 'a').outbox, 'spoof.json'), JSON.stringify({ from: 'b', to: 'b', act: 'inform', body: 'x' }));
    const report = await route();
    expect(report.rejected[0]!.reason.error).toContain('sits in the outbox of "a"');
  });
});
