// Dead letters can be looked at, retried and discarded (CLI, API, inspector). A retry is a
// new delivery, so the recipient's idempotency check does not swallow it, and it is
// delivered exactly once even when repeated; nothing is ever deleted.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { listDeadLetters } from '../src/queue/dead-letter.ts';
import { hivePaths } from '../src/layout/paths.ts';
import { startInspector } from '../src/inspector/server.ts';

const client = { id: 'client', brain: { kind: 'external' as const } };
const replies = (root: string) => readInbox(root, 'client', 0).entries.map((e) => e.message);

/** A command brain that fails while `gate` does not exist, then answers `fixed`. */
function gatedBrain(dir: string): { command: string; gate: string } {
  const gate = path.join(dir, 'fixed');
  const command = path.join(dir, 'brain.sh');
  fs.writeFileSync(command, `#!/bin/sh\ncat > /dev/null\nif [ ! -e '${gate}' ]; then echo 'not yet' >&2; exit 3; fi\necho fixed\n`, { mode: 0o755 });
  return { command, gate };
}

describe('dead-letter tools', () => {
  it('a poisoned message, retried once the brain is fixed, is delivered and answered exactly once (also when the retry is repeated)', async () => {
    const dir = tempDir();
    const { command, gate } = gatedBrain(dir);
    const hive = await startHive(fastConfig({ agents: [{ id: 'cli', brain: { kind: 'command', command } }, client], supervisor: { brainRetries: 0 } }));
    const req = await hive.send({ from: 'client', to: 'cli', act: 'request', body: 'please' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_POISON'), 'poisoned', 60_000);
    const name = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_POISON')!.name;

    const listed = await runHive(['dead-letter', 'list', '--root', hive.root, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).deadLetters.map((d: { name: string }) => d.name)).toContain(name);
    const shown = JSON.parse((await runHive(['dead-letter', 'show', name, '--root', hive.root, '--json'])).stdout);
    expect(shown.message).toMatchObject({ id: req.id, from: 'client', to: 'cli' });

    fs.writeFileSync(gate, ''); // the operator fixes the cause
    const retried = await runHive(['dead-letter', 'retry', name, '--root', hive.root, '--json']);
    expect(retried.code, retried.stderr).toBe(0);
    const [{ id: retryId }] = JSON.parse(retried.stdout).retried as { id: string }[];
    expect(retryId).not.toBe(req.id);
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === retryId), 'the retry is answered');
    expect(listDeadLetters(hive.root).map((d) => d.name)).not.toContain(name);
    const archived = JSON.parse(fs.readFileSync(path.join(hivePaths(hive.root).deadLetter, '.archive', `${name}.reason.json`), 'utf8'));
    expect(archived).toMatchObject({ code: 'E_POISON', resolution: 'retried', as: retryId });

    // A crash between the re-send and the archive leaves the dead letter in place: retried
    // again, it is the same message, and the recipient drops the copy.
    const dl = hivePaths(hive.root).deadLetter;
    fs.copyFileSync(path.join(dl, '.archive', name), path.join(dl, name));
    expect(hive.retryDeadLetters([name])[0]!.id).toBe(retryId);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(replies(hive.root).filter((m) => m.in_reply_to === retryId)).toHaveLength(1);
    // Retrying what is not there (any more) says so.
    const again = await runHive(['dead-letter', 'retry', name, '--root', hive.root]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`No dead letter "${name}"`);
  }, 90_000);

  it('discard moves a dead letter to the archive; one holding no valid message cannot be retried and says why; the inspector retries and discards', async () => {
    const hive = await startHive(fastConfig({ agents: [{ id: 'echo', brain: { kind: 'echo' } }, client] }));
    const outbox = path.join(hive.root, 'agents', 'client', 'outbox');
    fs.writeFileSync(path.join(outbox, 'garbage.json'), '{ not json');
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.name.endsWith('garbage.json')), 'the garbage is dead-lettered');
    const garbage = listDeadLetters(hive.root).find((d) => d.name.endsWith('garbage.json'))!.name;
    expect(() => hive.retryDeadLetters([garbage])).toThrow(/holds no valid message, so it cannot be retried/);
    const discarded = await runHive(['dead-letter', 'discard', garbage, '--root', hive.root]);
    expect(discarded.code, discarded.stderr).toBe(0);
    expect(hive.deadLetters().map((d) => d.name)).not.toContain(garbage);
    expect(fs.readFileSync(path.join(hivePaths(hive.root).deadLetter, '.archive', garbage), 'utf8')).toBe('{ not json');

    // An unknown recipient; the agent is spawned later, and the inspector's Retry delivers it.
    const lost = await hive.send({ from: 'client', to: 'later', act: 'request', body: 'are you there?' });
    await waitFor(hive, () => listDeadLetters(hive.root).some((d) => d.reason?.code === 'E_UNKNOWN_AGENT'), 'dead-lettered as unknown');
    const name = listDeadLetters(hive.root).find((d) => d.reason?.code === 'E_UNKNOWN_AGENT')!.name;
    await hive.spawn({ id: 'later', brain: { kind: 'echo' } });
    const inspector = await startInspector(hive);
    const post = (action: string, body: unknown, token = inspector.token) =>
      fetch(`http://127.0.0.1:${inspector.port}/api/dead-letters/${action}`, { method: 'POST', headers: { 'x-hive-token': token, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('retry', { name }, 'wrong')).status).toBe(401);
    const res = await post('retry', { name });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    await waitFor(hive, () => replies(hive.root).some((m) => m.in_reply_to === id), 'answered by the spawned agent');
    expect(replies(hive.root).find((m) => m.in_reply_to === id)!.body).toContain(lost.body);
    expect((await post('discard', { name: 'nope' })).status).toBe(404);
    await inspector.close();
  }, 90_000);
});
