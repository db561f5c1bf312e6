import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { ensureAgent, ensureHive } from '../src/layout/ensure.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage } from '../src/protocol/message.ts';
import { StateStore, decodeCommitLines, decodeCommitRun, encodeCommitLine, readStateFile, type StateFile } from '../src/agent/state-store.ts';
import { spillUnrouted } from '../src/agent/spill.ts';
import { createFsTransport } from '../src/queue/fs-transport.ts';
import { DEFAULT_ROUTER_SETTINGS, routeOnce } from '../src/router/route.ts';
import { listInbox } from '../src/queue/inbox.ts';

// A commit line of state.wal: `<CRC-32 in 8 hex> <json>\n`. Hive 0.1 wrote `<first 16 hex
// of the SHA-256> <json>\n`: a hive it wrote must read on after an upgrade, with lines of
// both kinds in one log.

const record = (commit: number, body = `note ${commit}`): StateFile => ({
  version: 1,
  agent: 'a',
  commit,
  cursor: commit,
  snapshot: { value: 'idle', context: { agentId: 'a', cursor: commit, handled: commit, turns: commit, brainState: null, timers: [] } },
  lastTurn: { cursor: commit, messages: [{ ...createMessage({ id: `m-${commit}`, from: 'a', to: 'b', act: 'inform', body }), created_at: new Date(0).toISOString() }] },
  committed_at: new Date(0).toISOString(),
});

const legacyLine = (r: StateFile): Buffer => {
  const json = JSON.stringify(r);
  return Buffer.from(`${createHash('sha256').update(json).digest('hex').slice(0, 16)} ${json}\n`);
};

describe('commit lines', () => {
  it('a line is the CRC-32 of its JSON in 8 hex digits, a space and the JSON', () => {
    const r = record(1);
    const json = JSON.stringify(r);
    expect(encodeCommitLine(r).toString()).toBe(`${crc32(json).toString(16).padStart(8, '0')} ${json}\n`);
  });

  it('lines of the earlier format and of this one decode side by side, in one run', () => {
    const buf = Buffer.concat([legacyLine(record(1)), legacyLine(record(2)), encodeCommitLine(record(3)), encodeCommitLine(record(4))]);
    expect(decodeCommitLines(buf, 'a').map((r) => r.commit)).toEqual([1, 2, 3, 4]);
    const run = decodeCommitRun(buf, 'a', 1);
    expect(run.lines.map((l) => l.record.commit)).toEqual([1, 2, 3, 4]);
  });

  it('a torn line of either format stops the run at every cut, and a changed byte is never read as a commit', () => {
    for (const line of [encodeCommitLine(record(2)), legacyLine(record(2))]) {
      const first = encodeCommitLine(record(1));
      for (let cut = 1; cut < line.length - 1; cut++) {
        const buf = Buffer.concat([first, line.subarray(0, cut), Buffer.alloc(64)]);
        expect(decodeCommitRun(buf, 'a', 1).lines.map((l) => l.record.commit), `cut at ${cut}`).toEqual([1]);
        expect(decodeCommitLines(buf, 'a').map((r) => r.commit), `cut at ${cut}`).toEqual([1]);
      }
      for (let i = 0; i < line.length - 1; i += 7) {
        const changed = Buffer.from(line);
        changed[i] = changed[i] === 0x78 ? 0x79 : 0x78;
        expect(decodeCommitLines(changed, 'a'), `change at ${i}`).toEqual([]);
      }
    }
  });

  it('a state.wal written by Hive 0.1 restores, takes new commits after its last one, and its unrouted messages are routed once', async () => {
    const root = tempRoot();
    await ensureHive(root);
    for (const id of ['a', 'b']) await ensureAgent(root, { id, brain: { kind: 'echo' } });
    const wal = agentPaths(root, 'a').stateWal;
    const old = Buffer.concat([legacyLine(record(1)), legacyLine(record(2))]);
    const size = 64 * 1024; // the log's preallocated size
    const buf = Buffer.alloc(size);
    old.copy(buf);
    fs.writeFileSync(wal, buf);
    fs.writeFileSync(agentPaths(root, 'a').committed, JSON.stringify({ commit: 2 }));
    expect(readStateFile(root, 'a')?.commit).toBe(2);

    const store = new StateStore(root, 'a', 2, size, () => spillUnrouted(root, 'a'));
    store.append({ ...record(3).snapshot.context }, record(3).lastTurn.messages);
    store.close();
    expect(readStateFile(root, 'a')?.commit).toBe(3);

    const t = createFsTransport(root);
    const report = await routeOnce({ root, transport: t, settings: { ...DEFAULT_ROUTER_SETTINGS, settleMs: 0 } });
    expect(report.rejected).toEqual([]);
    expect(listInbox(root, 'b').map((e) => e.message?.body)).toEqual(['note 1', 'note 2', 'note 3']);
    t.close();
  });
});
