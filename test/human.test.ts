import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { runHive } from './helpers/fixture.ts';
import { listInbox, readInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import fs from 'node:fs';
import { questionsFile } from '../src/human/ledger.ts';
import { agentPaths } from '../src/layout/paths.ts';
import { createMessage } from '../src/protocol/message.ts';
import { writeOutbox } from '../src/queue/outbox.ts';
import { stableId } from '../src/protocol/ids.ts';
import { answerQuestion, listQuestions } from '../src/human/questions.ts';

const writer = { kind: 'machine' as const, module: path.join(process.cwd(), 'scripts', 'demo', 'writer.ts') };
const inbox = (root: string, id: string) => readInbox(root, id, 0).entries.map((e) => e.message);
const everything = (root: string, id: string) => listInbox(root, id).map((e) => e.message!);

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

  it('one rule for what a question is: hive ask, the API and the ledger agree; answers are kept once, in the ledger', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: { kind: 'external' } }] }));
    // Each kind of message god can be sent, and whether a person must answer it.
    const cases = [
      { body: 'flagged', input: { from: 'a', to: 'worker-x', act: 'inform', needs_human: true }, question: true },
      { body: 'awaits a reply', input: { from: 'a', to: 'god', act: 'inform', requires_reply: true }, question: true },
      { body: 'a query', input: { from: 'a', to: 'human', act: 'query' }, question: true },
      { body: 'just news', input: { from: 'a', to: 'god', act: 'inform' }, question: false },
      { body: 'a note to self', input: { from: 'god', to: 'god', act: 'request', requires_reply: true }, question: false },
    ] as const;
    for (const c of cases) await hive.send({ ...c.input, body: c.body });
    await waitFor(hive, () => listInbox(hive.root, 'god').length >= cases.length, 'every message reaches god');
    const listed = await runHive(['ask', '--root', hive.root, '--json']);
    const askBodies = JSON.parse(listed.stdout).questions.map((q: { body: string }) => q.body).sort();
    const expected = cases.filter((c) => c.question).map((c) => c.body).sort();
    expect(askBodies).toEqual(expected);
    expect(hive.questions().map((q) => q.body).sort()).toEqual(expected);
    const ledger = () => fs.readFileSync(questionsFile(hive.root), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; body: string; in_reply_to?: string });
    await waitFor(hive, () => ledger().filter((l) => l.type === 'question').length === expected.length, 'the ledger records the questions');
    expect(ledger().filter((l) => l.type === 'question').map((l) => l.body).sort()).toEqual(expected);

    const q = hive.questions().find((x) => x.body === 'a query')!;
    hive.answer(q.id, 'yes');
    expect(ledger().filter((l) => l.type === 'answer').map((l) => l.in_reply_to)).toEqual([q.id]);
    expect(fs.existsSync(`${agentPaths(hive.root, 'god').dir}/answers.json`)).toBe(false);
    expect(hive.questions().map((x) => x.body)).not.toContain('a query');
    await waitFor(hive, () => inbox(hive.root, 'a').some((m) => m.in_reply_to === q.id), 'the answer is delivered');
    // Delivered, the answer adds no second ledger line.
    expect(ledger().filter((l) => l.type === 'answer')).toHaveLength(1);
  });

  it('a hive from before the ledger was the store keeps what answers.json says was answered', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: { kind: 'external' } }] }));
    const q = createMessage({ from: 'a', to: 'god', act: 'query', body: 'old question' });
    writeOutbox(hive.root, [q]);
    hive.supervisor.kickRouter(['a']);
    await waitFor(hive, () => hive.questions({ open: false }).some((x) => x.id === q.id), 'the question reaches god');
    fs.writeFileSync(`${agentPaths(hive.root, 'god').dir}/answers.json`, JSON.stringify({ answered: { [q.id]: { answer_id: 'old-answer', at: '2026-01-01T00:00:00.000Z' } } }));
    expect(hive.questions().map((x) => x.id)).not.toContain(q.id);
    expect(hive.questions({ open: false }).find((x) => x.id === q.id)!.answered).toEqual({ answer_id: 'old-answer', at: '2026-01-01T00:00:00.000Z' });
  });

  it('a crash between writing the answer and recording it leaves the question open; answering again reaches the asker once', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: { kind: 'external' } }] }));
    const q = await hive.send({ from: 'a', to: 'god', act: 'query', body: 'ship it?' });
    await waitFor(hive, () => hive.questions().length === 1, 'question');
    // What answerQuestion's first step leaves when the process dies before its second: the
    // reply (under its derived id) in god's outbox, no ledger line.
    writeOutbox(hive.root, [createMessage({ id: stableId('answer', q.id, ''), from: 'god', to: 'a', act: 'inform', body: 'yes', in_reply_to: q.id, conversation: q.conversation })]);
    hive.supervisor.kickRouter(['god']);
    await waitFor(hive, () => inbox(hive.root, 'a').some((m) => m.in_reply_to === q.id), 'the first copy delivered');
    expect(hive.questions().map((x) => x.id)).toEqual([q.id]); // still open: not recorded
    const again = hive.answer(q.id, 'yes');
    expect(again.id).toBe(stableId('answer', q.id, ''));
    expect(hive.questions()).toEqual([]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(inbox(hive.root, 'a').filter((m) => m.in_reply_to === q.id)).toHaveLength(1);
  });
  it('a question delivered twice is listed once, so answering every open question answers it once (the chaos workload under a planted duplicate delivery)', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'a', brain: { kind: 'external' } }] }));
    const q = await hive.send({ from: 'a', to: 'god', act: 'query', body: 'twice?' });
    await waitFor(hive, () => hive.questions().length === 1, 'question');
    const rows = listInbox(hive.root, 'god');
    const row = rows.find((r) => r.message?.id === q.id)!;
    const inbox = [...rows, { ...row, seq: row.seq + 1_000 }];
    const open = listQuestions(hive.root, { open: true, inbox });
    expect(open.map((x) => x.id)).toEqual([q.id]);
    for (const x of open) answerQuestion(hive.root, x.id, 'once', { inbox });
    expect(listQuestions(hive.root, { open: true, inbox })).toEqual([]);
  });
});
