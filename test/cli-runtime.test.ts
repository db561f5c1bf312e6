import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/temp.ts';
import { REPO, runHive } from './helpers/fixture.ts';
import { readInbox } from '../src/queue/inbox.ts';

function startCli(configFile: string) {
  const child = spawn(process.execPath, [path.join(REPO, 'scripts', 'hive.mjs'), 'start', '--config', configFile], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (l) => {
      lines.push(l);
      if (l.startsWith('hive ready:')) resolve(l);
    });
    void exited.then((code) => reject(new Error(`hive start exited ${code} before ready: ${stderr}`)));
  });
  return { child, lines, ready, exited, stderr: () => stderr };
}

describe('hive start / status / spawn / stop against a running supervisor', () => {
  it('prints one ready line, serves status and spawn, and exits 0 on SIGINT', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    const config = path.join(dir, 'hive.config.ts');
    fs.writeFileSync(
      config,
      `export default { root: './hive', agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'client', brain: { kind: 'external' } }], supervisor: { inboxPollMs: 300 } };\n`,
    );
    const run = startCli(config);
    const ready = await run.ready;
    expect(ready).toMatch(new RegExp(`^hive ready: root=${root} agents=1 pid=\\d+`));

    const spawned = await runHive(['spawn', '--root', root, '--id', 'late', '--brain', 'echo']);
    expect(spawned.stdout, spawned.stderr).toContain('spawned late in the running hive');

    const status = await runHive(['status', '--root', root, '--json']);
    expect(status.code, status.stderr).toBe(0);
    const data = JSON.parse(status.stdout);
    expect(data.running).toBe(true);
    const late = data.actors.find((a: { id: string }) => a.id === 'late');
    expect(late).toMatchObject({ kind: 'agent', status: 'running', restarts: 0, inboxDepth: 0, cursor: 0 });
    expect(data.actors.find((a: { id: string }) => a.id === 'router')).toMatchObject({ kind: 'router', status: 'running' });

    const sent = await runHive(['send', '--root', root, '--from', 'client', '--to', 'late', '--act', 'request', '--body', 'hi']);
    expect(sent.code).toBe(0);
    const deadline = Date.now() + 10_000;
    while (readInbox(root, 'client', 0).entries.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(readInbox(root, 'client', 0).entries[0]?.message.in_reply_to).toBe(sent.stdout.trim());
    expect(run.lines.some((l) => l.includes('client → late') && l.includes('request'))).toBe(true);

    // The table, once the turn is committed and reported (not at a fixed moment: a loaded machine may lag).
    let text = await runHive(['status', '--root', root]);
    for (let i = 0; i < 50 && !/late\s+agent\s+echo\s+idle\s+running\s+0\s+0\s+1/.test(text.stdout); i++) {
      await new Promise((r) => setTimeout(r, 200));
      text = await runHive(['status', '--root', root]);
    }
    expect(text.stdout).toMatch(/late\s+agent\s+echo\s+idle\s+running\s+0\s+0\s+1/);

    expect((await runHive(['stop', 'late', '--root', root])).code).toBe(0);
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
    expect(fs.existsSync(path.join(root, 'hive.lock'))).toBe(false);

    const offline = JSON.parse((await runHive(['status', '--root', root, '--json'])).stdout);
    expect(offline.running).toBe(false);
    expect(offline.actors.find((a: { id: string }) => a.id === 'late')).toMatchObject({ status: 'stopped', cursor: 1 });
  }, 60_000);

  it('exits 0 on SIGTERM too, and a bad config exits 1 naming the path', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'bad.config.ts');
    fs.writeFileSync(config, `export default { root: './hive', agents: [{ id: 'a', brain: { kind: 'module' } }] };\n`);
    const bad = await runHive(['start', '--config', config]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Expected `agents[0].brain.module` to be a string, got nothing');

    const good = path.join(dir, 'good.config.ts');
    fs.writeFileSync(good, `export default { root: './hive2', agents: [] };\n`);
    const run = startCli(good);
    await run.ready;
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  }, 60_000);
});
