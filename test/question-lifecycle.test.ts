// A question is open, answered, or withdrawn: an asker that moved on withdraws it
// (ctx.withdraw; the demo's writer does when it takes its default), it leaves hive ask and
// the inspector's open cards, and a late answer is refused with the reason instead of
// being accepted and ignored.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { runHive } from './helpers/fixture.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { startInspector } from '../src/inspector/server.ts';

const writer = { kind: 'machine' as const, module: path.join(process.cwd(), 'scripts', 'demo', 'writer.ts') };
const before = process.env.HIVE_DEMO_WAIT_MS;
beforeAll(() => {
  process.env.HIVE_DEMO_WAIT_MS = '800'; // the writer's default comes after 0.8 s (its workers read it)
});
afterAll(() => {
  if (before === undefined) delete process.env.HIVE_DEMO_WAIT_MS;
  else process.env.HIVE_DEMO_WAIT_MS = before;
});

describe('question lifecycle', () => {
  it('the writer withdraws its question when it takes the default; the late answer is refused everywhere with the reason', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'writer', brain: writer }, { id: 'boss', brain: { kind: 'external' } }] }));
    const inspector = await startInspector(hive);
    const req = await hive.send({ from: 'boss', to: 'writer', act: 'request', body: 'Draft a short announcement for: the launch' });
    await waitFor(hive, () => hive.questions({ open: false }).length === 1, 'the writer asks');
    const [q] = hive.questions({ open: false });
    expect(q).toMatchObject({ state: expect.stringMatching(/open|withdrawn/), from: 'writer' });
    await waitFor(hive, () => readInbox(hive.root, 'boss', 0).entries.some((e) => e.message.in_reply_to === req.id), 'the writer took its default');
    await waitFor(hive, () => hive.questions({ open: false })[0]?.state === 'withdrawn', 'the question is withdrawn');
    const closed = hive.questions({ open: false })[0]!;
    expect(closed.withdrawn?.reason).toContain('took the default');
    expect(hive.questions()).toEqual([]); // not open any more

    const listed = await runHive(['ask', '--root', hive.root, '--json']);
    expect(JSON.parse(listed.stdout).questions).toEqual([]);
    const all = await runHive(['ask', '--root', hive.root, '--all']);
    expect(all.stdout).toContain('(withdrawn: nobody answered in time');
    const cli = await runHive(['answer', q!.id, '--body', 'playful', '--root', hive.root]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/was withdrawn by writer at .*took the default.*no answer was sent \[E_CONFLICT\]/);
    expect(() => hive.answer(q!.id, 'playful')).toThrow(/was withdrawn by writer/);
    const page = await fetch(`http://127.0.0.1:${inspector.port}/api/answer`, { method: 'POST', headers: { 'x-hive-token': inspector.token, 'content-type': 'application/json' }, body: JSON.stringify({ id: q!.id, body: 'playful' }) });
    expect(page.status).toBe(409);
    expect(((await page.json()) as { error: { message: string } }).error.message).toContain('was withdrawn');
    // Nothing reached the writer: it got no answer to ignore.
    expect(readInbox(hive.root, 'writer', 0).entries.filter((e) => e.message.from === 'god')).toEqual([]);
    await inspector.close();
  }, 60_000);
});
