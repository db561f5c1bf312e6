import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { createMessage } from '../src/protocol/message.ts';

/**
 * test/fixtures/legacy-hive was written by the previous version (file-per-message inboxes):
 * echo's inbox holds legacy-1..3 handled (in .done/, cursor 3) and legacy-4..5 pending, a
 * `.head` token, a lock owner record and (made here: git keeps no empty folder) a lock left
 * by a killed router.
 */
function legacyHive(): string {
  const root = tempRoot();
  fs.cpSync(path.join(import.meta.dirname, 'fixtures', 'legacy-hive'), root, { recursive: true });
  fs.mkdirSync(path.join(agentPaths(root, 'echo').inbox, '.lock'), { recursive: true });
  return root;
}

describe('migration of a hive folder written by the file-per-message version', () => {
  it('at start: every entry moves into the log at its seq, the pending ones are answered once, the handled ones never again, and their ids still dedupe', async () => {
    const root = legacyHive();
    const inbox = agentPaths(root, 'echo').inbox;
    expect(fs.readdirSync(inbox).filter((n) => n.endsWith('.json')).length).toBe(3); // 4, 5 and .lock.owner.json
    const hive = await startHive(fastConfig({ root, agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }] }));
    const replies = () => listInbox(root, 'client').map((e) => e.message.in_reply_to);
    await waitFor(hive, () => replies().includes('legacy-4') && replies().includes('legacy-5'), 'the pending legacy entries answered');
    expect(fs.readdirSync(inbox).sort()).toEqual(['.synced', '000000000001.jsonl']);
    expect(listInbox(root, 'echo').map((e) => [e.seq, e.id, e.done])).toEqual([1, 2, 3, 4, 5].map((i) => [i, `legacy-${i}`, true]));
    // A copy of a handled message (a sender retrying) is dropped: the migrated ids are known.
    writeOutbox(root, [{ ...createMessage({ from: 'client', to: 'echo', act: 'request', body: 'again' }), id: 'legacy-2' }]);
    const fresh = createMessage({ from: 'client', to: 'echo', act: 'request', body: 'new' });
    writeOutbox(root, [fresh]);
    await waitFor(hive, () => replies().includes(fresh.id), 'a new request answered after the migration');
    expect(listInbox(root, 'echo').map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(replies().filter((id) => id?.startsWith('legacy-')).sort()).toEqual(['legacy-4', 'legacy-5']);
    expect(fs.readFileSync(path.join(root, 'log.jsonl'), 'utf8')).toMatch(/"type":"inbox.migrated","agent":"echo","entries":5,"last":5/);
    await hive.close();
  });
});
