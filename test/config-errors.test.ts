// A configuration mistake is reported as one and never costs a message: a brain that cannot
// be started fails its agent at once (start() and spawn() say why), its messages wait in
// its inbox, and a provider that cannot be run or reached later pauses the turn instead of
// counting it toward poison. A real poison message names the error its brain last raised.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { tempDir } from './helpers/temp.ts';
import { createHive } from '../src/hive.ts';
import { loadConfig } from '../src/config/load.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { readRegistry } from '../src/registry/registry.ts';

const client = { id: 'client', brain: { kind: 'external' as const } };
const replies = (root: string) => readInbox(root, 'client', 0).entries.map((e) => e.message);

/** An executable shell script that reads its prompt and answers `answer`. */
function script(file: string, body = 'cat > /dev/null\necho answered'): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe('configuration errors are not message errors', () => {
  it('a command path relative to the config is run from the config folder', async () => {
    const dir = tempDir();
    script(path.join(dir, 'bin', 'brain.sh'));
    fs.writeFileSync(path.join(dir, 'hive.config.json'), JSON.stringify({ root: './hive', agents: [{ id: 'cli', brain: { kind: 'command', command: './bin/brain.sh' } }, client] }));
    const config = await loadConfig(path.join(dir, 'hive.config.json'));
    const hive = await startHive({ ...fastConfig(), ...config, audit: { enabled: false } });
    await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'hi' });
    await waitFor(hive, () => replies(hive.root).length === 1, 'the reply');
    expect(replies(hive.root)[0]!.body).toBe('answered');
  });

  it('start() rejects a config whose brain cannot be started, naming the agent and the file; fixed, the same config starts and answers', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    const brain = path.join(dir, 'bin', 'brain.sh');
    const config = fastConfig({ root, agents: [{ id: 'cli', brain: { kind: 'command', command: brain } }, client] });
    const broken = createHive(config);
    const err = await broken.start().then(() => null, (e: unknown) => e as { code: string; message: string });
    expect(err?.code).toBe('E_BAD_CONFIG');
    expect(err?.message).toContain(`Agent "cli": brain command ${brain} does not exist`);
    expect(readRegistry(root).agents.cli?.status).toBe('failed');
    // The same for a module brain that does not import.
    fs.writeFileSync(path.join(dir, 'bad.mjs'), "import './missing.mjs';\nexport default { handle: () => ({ messages: [] }) };\n");
    const badModule = createHive(fastConfig({ root: path.join(dir, 'hive2'), agents: [{ id: 'm', brain: { kind: 'module', module: path.join(dir, 'bad.mjs') } }] }));
    const err2 = await badModule.start().then(() => null, (e: unknown) => e as { code: string; message: string });
    expect(err2?.code).toBe('E_BAD_CONFIG');
    expect(err2?.message).toMatch(/Agent "m": brain module .*bad\.mjs could not be loaded: .*missing\.mjs/);

    // The operator fixes it; a request sent meanwhile is answered once, never poisoned.
    script(brain);
    const hive = await startHive(config);
    const req = await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'after the fix' });
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === req.id), 'the reply');
    expect(readRegistry(root).agents.cli?.status).toBe('active');
  });

  it('spawn() of a brain that cannot start rejects; its messages wait unpoisoned until it is spawned again with the fix; the rest of the hive runs', async () => {
    const dir = tempDir();
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    const brain = path.join(dir, 'brain.sh');
    const err = await hive.spawn({ id: 'late', brain: { kind: 'command', command: brain } }).then(() => null, (e: unknown) => e as { code: string; message: string });
    expect(err?.code).toBe('E_BAD_CONFIG');
    expect(err?.message).toContain('does not exist');
    expect(hive.status().find((s) => s.id === 'late')?.status).toMatch(/^failed: brain command .* does not exist/);
    const waiting = await hive.send({ from: 'client', to: 'late', act: 'request', body: 'wait for me' });
    const other = await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'meanwhile' });
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === other.id), 'the rest of the hive answers');
    await waitFor(hive, () => readInbox(hive.root, 'late', 0).entries.some((e) => e.message.id === waiting.id), 'the message waits in its inbox');
    script(brain);
    await hive.spawn({ id: 'late', brain: { kind: 'command', command: brain } });
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === waiting.id), 'answered after the fix');
    expect(replies(hive.root).filter((m) => m.in_reply_to === waiting.id)).toHaveLength(1);
    expect(listDeadLetters(hive.root)).toEqual([]);
  });

  it('a provider that cannot be run any more pauses the turn (status says so) instead of poisoning the message; it goes on once the program is back', async () => {
    const dir = tempDir();
    const brain = script(path.join(dir, 'brain.sh'));
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', brain: { kind: 'command', command: brain } }, client] }));
    const first = await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'one' });
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === first.id), 'the first reply');
    fs.renameSync(brain, `${brain}.away`); // someone moved it: ENOENT at the next turn
    const second = await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'two' });
    await waitFor(hive, () => hive.status().find((s) => s.id === 'cli')?.status === 'paused: brain unavailable', 'paused', 20_000);
    await new Promise((r) => setTimeout(r, 3_000)); // several retries' worth: none may count toward poison
    expect(listDeadLetters(hive.root)).toEqual([]);
    expect(hive.status().find((s) => s.id === 'cli')?.restarts).toBe(0);
    fs.renameSync(`${brain}.away`, brain);
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === second.id), 'answered once the program is back', 40_000);
    expect(replies(hive.root).filter((m) => m.in_reply_to === second.id)).toHaveLength(1);
    await waitFor(hive, () => hive.status().find((s) => s.id === 'cli')?.status === 'running', 'resumed');
  }, 90_000);

  it('the poison reason names the error the brain last failed with', async () => {
    const dir = tempDir();
    const brain = script(path.join(dir, 'brain.sh'), 'cat > /dev/null\necho "quota exhausted for model xyz-1" >&2\nexit 3');
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', brain: { kind: 'command', command: brain } }, client], supervisor: { brainRetries: 0 } }));
    const req = await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'fails every time' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON' && d.name.includes(req.id)), 'poisoned', 60_000);
    const dead = listDeadLetters(hive.root).find((d) => d.name.includes(req.id))!;
    expect(dead.reason?.error).toMatch(/the last attempt ended with: .*exited with code 3: quota exhausted for model xyz-1/);
  }, 90_000);
});
