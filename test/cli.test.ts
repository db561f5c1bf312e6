import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempRoot } from './helpers/temp.ts';
import { runHive } from './helpers/fixture.ts';
import { runCli } from '../src/cli/main.ts';
import { memoryIO } from '../src/cli/io.ts';
import { readOutbox } from '../src/queue/outbox.ts';
import { deliverDirect as deliver } from './helpers/deliver.ts';
import { commitCursor } from '../src/queue/cursor.ts';
import { createMessage } from '../src/protocol/message.ts';
import { ensureAgent } from '../src/layout/ensure.ts';
import { formatDuration, stateText } from '../src/cli/commands/status.ts';
import { agentToken } from '../src/hooks/agent-token.ts';

async function cli(args: string[], input = '') {
  const io = memoryIO(input);
  const code = await runCli(args, io.io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('hive CLI', () => {
  it('token prints an agent\'s hooks token; spawn of an external agent prints it too', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    const spawned = await cli(['spawn', '--root', root, '--id', 'outside', '--brain', 'external']);
    expect(spawned.code).toBe(0);
    const token = await cli(['token', 'outside', '--root', root]);
    expect(token.stdout).toBe(`export HIVE_AGENT_TOKEN=${agentToken(root, 'outside')}\n`);
    expect(spawned.stdout).toContain(token.stdout);
    expect((await cli(['token', 'nobody', '--root', root])).stderr).toContain('No agent "nobody"');
  });

  it('status says how long a running turn has been going (thinking for 12 min)', () => {
    expect(stateText({ state: 'thinking', busyMs: 720_000 })).toBe('thinking for 12 min');
    expect(stateText({ state: 'thinking', busyMs: 3_400 })).toBe('thinking for 3 s');
    expect(stateText({ state: 'thinking', busyMs: 200 })).toBe('thinking');
    expect(stateText({ state: 'idle', busyMs: null })).toBe('idle');
    expect(formatDuration(7_300_000)).toBe('2 h');
  });

  it('init creates a hive; send writes a durable outbox file and prints the id', async () => {
    const root = tempRoot();
    expect((await cli(['init', '--root', root])).code).toBe(0);
    const r = await cli(['send', '--root', root, '--from', 'god', '--to', 'god', '--act', 'query', '--subject', 'S', '--body', 'B', '--needs-human', '--conversation', 'c-1', '--in-reply-to', 'x-1']);
    expect(r.code).toBe(0);
    const id = r.stdout.trim();
    const [file] = readOutbox(root, 'god');
    expect(file!.parsed.ok && file!.parsed.message).toMatchObject({ id, act: 'query', subject: 'S', body: 'B', needs_human: true, conversation: 'c-1', in_reply_to: 'x-1' });
  });

  it('send --body - reads the body from stdin', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    expect((await cli(['send', '--root', root, '--from', 'god', '--to', 'god', '--body', '-'], 'from stdin\n')).code).toBe(0);
    const [file] = readOutbox(root, 'god');
    expect(file!.parsed.ok && file!.parsed.message.body).toBe('from stdin\n');
  });

  it('a bad flag or value is a usage error naming it (exit 2)', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    const unknown = await cli(['send', '--root', root, '--from', 'god', '--to', 'god', '--body', 'x', '--colour', 'red']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--colour'");
    expect(unknown.stderr).toContain('usage: hive send');
    const act = await cli(['send', '--root', root, '--from', 'god', '--to', 'god', '--body', 'x', '--act', 'yell']);
    expect(act.code).toBe(2);
    expect(act.stderr).toContain('expected --act to be one of');
    const missing = await cli(['send', '--root', root, '--from', 'god', '--body', 'x']);
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.stderr).toContain('missing --to');
    expect((await cli(['frobnicate'])).code).toBe(2);
  });

  it('an invalid message exits 1 with the schema error and writes nothing', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    const r = await cli(['send', '--root', root, '--from', 'god', '--to', '../../etc', '--body', 'x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('field `to`');
    expect(readOutbox(root, 'god')).toEqual([]);
  });

  it('inbox lists delivered messages with seq and cursor state', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    await ensureAgent(root, { id: 'bob' });
    await deliver(root, 'bob', [1, 2, 3].map((i) => createMessage({ from: 'god', to: 'bob', act: 'inform', body: `m${i}` })));
    commitCursor(root, 'bob', 2);
    const r = await cli(['inbox', 'bob', '--root', root, '--json']);
    expect(r.code).toBe(0);
    const data = JSON.parse(r.stdout);
    expect(data.cursor).toBe(2);
    expect(data.messages.map((m: { seq: number; processed: boolean }) => [m.seq, m.processed])).toEqual([[1, true], [2, true], [3, false]]);
    const text = await cli(['inbox', 'bob', '--root', root]);
    expect(text.stdout).toMatch(/3\s+pending\s+god inform\s+m3/);
    expect((await cli(['inbox', 'nobody', '--root', root])).code).toBe(1);
    const escape = await cli(['inbox', '../../etc', '--root', root]);
    expect(escape.code).toBe(2);
    expect(escape.stderr).toContain('expected AGENT to be an agent id');
  });

  it('session and question commands name a missing hive or agent instead of creating it', async () => {
    const root = tempRoot();
    await cli(['init', '--root', root]);
    const typo = await cli(['clear', 'typo-agent', '--root', root]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('No agent "typo-agent"');
    expect(fs.existsSync(`${root}/agents/typo-agent`)).toBe(false);
    const nowhere = await cli(['ask', '--root', `${root}/nowhere`]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain('is not a hive');
    expect((await cli(['import', 'snap', '--into', 'typo-agent', '--root', root])).stderr).toContain('No agent "typo-agent"');
    expect((await cli(['log', '--root', root, '--agent', '../x'])).code).toBe(2);
  });

  it('runs as a real process through the bin (npx hive)', async () => {
    const root = tempRoot();
    expect((await runHive(['init', '--root', root])).code).toBe(0);
    const sent = await runHive(['send', '--root', root, '--from', 'god', '--to', 'god', '--body', '-'], { input: 'piped' });
    expect(sent.code).toBe(0);
    expect(sent.stdout.trim()).toMatch(/^[0-9a-z]{26}$/);
    expect(fs.existsSync(`${root}/agents/god/outbox/${sent.stdout.trim()}.json`)).toBe(true);
    const bad = await runHive(['send', '--root', root, '--nope']);
    expect(bad.code).toBe(2);
  }, 90_000);
});
