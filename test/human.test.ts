import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { runHive } from './helpers/fixture.ts';
import { listInbox, readInbox, readInboxEntry } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';

const writer = { kind: 'module' as const, module: path.join(process.cwd(), 'scripts', 'demo', 'writer.ts') };
const inbox = (root: string, id: string) => readInbox(root, id, 0).entries.map((e) => e.message);
const everything = (root: string, id: string) => listInbox(root, id).map((e) => readInboxEntry(root, id, e.name)!);

describe('human in the loop', () => {
  it('a needs_human question becomes an ASK ME card; the answer reaches the asker in the same conversation', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'writer', brain: writer }, { id: 'boss', brain: { kind: 'external' } }] }));
    const req = await hive.send({ from: 'boss', to: 'writer', act: 'request', body: 'Draft a short announcement for: the demo' });
    await waitFor(hive, () => hive.questions().length === 1, 'the writer asks the people');
    const [q] = hive.questions();
    expect(q).toMatchObject({ from: 'writer', needs_human: true, subject: 'Tone?', answered: null });
    expect(q!.conversation).toBe(req.conversation);

    const listed = await runHive(['ask', '--root', hive.root, '--json']);
    expect(JSON.parse(listed.stdout).questions.map((x: { id: string }) => x.id)).toEqual([q!.id]);

    const answered = await runHive(['answer', q!.id, '--body', 'playful', '--root', hive.root]);
    expect(answered.code, answered.stderr).toBe(0);
    await waitFor(hive, () => inbox(hive.root, 'boss').length === 1, 'the writer finishes with the answer');
    const result = inbox(hive.root, 'boss')[0]!;
    expect(result).toMatchObject({ from: 'writer', in_reply_to: req.id });
    expect(result.body).toContain('(playful)');
    const answer = everything(hive.root, 'writer').find((m) => m.from === 'god')!;
    expect(answer).toMatchObject({ act: 'inform', in_reply_to: q!.id, conversation: q!.conversation });
    expect(hive.questions()).toEqual([]);
    expect(hive.questions({ open: false })[0]!.answered?.answer_id).toBe(answer.id);
    expect(readStateFile(hive.root, 'writer')!.snapshot.context.timers).toEqual([]);
    const again = await runHive(['answer', q!.id, '--body', 'formal', '--root', hive.root]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already answered');
  }, 90_000);

  it('the API answers too, and an unknown question id is a clear error', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: { kind: 'external' } }] }));
    const q = await hive.send({ from: 'a', to: 'human', act: 'query', body: 'ship it?' });
    await waitFor(hive, () => hive.questions().length === 1, 'question');
    const reply = hive.answer(q.id, 'yes');
    await waitFor(hive, () => inbox(hive.root, 'a').some((m) => m.id === reply.id), 'answer delivered');
    expect(() => hive.answer('nope', 'x')).toThrow(/No question "nope"/);
  });
});
