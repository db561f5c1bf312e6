// The CLI follows Node tools' conventions: --json output that parses with ISO times, root
// discovery like git's (and an error that says where it looked), a closed pipe ends a
// command quietly.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/temp.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'hive.mjs');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function hive(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, HIVE_ROOT: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('CLI conventions', () => {
  it('finds the hive from a subfolder, as git finds a repository; elsewhere the error says where it looked', async () => {
    const project = tempDir();
    expect((await hive(['init', '--json'], project)).stdout).toContain(JSON.stringify({ root: path.join(project, '.hive') }).slice(0, -1));
    expect((await hive(['spawn', '--id', 'ann', '--brain', 'echo'], project)).code).toBe(0);
    const deep = path.join(project, 'src', 'lib');
    fs.mkdirSync(deep, { recursive: true });
    const status = await hive(['status', '--json'], deep);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).actors.map((a: { id: string }) => a.id)).toContain('ann');
    // A hive.config.json names its root.
    const other = tempDir();
    fs.writeFileSync(path.join(other, 'hive.config.json'), JSON.stringify({ root: path.join(project, '.hive') }));
    fs.mkdirSync(path.join(other, 'sub'));
    expect(JSON.parse((await hive(['status', '--json'], path.join(other, 'sub'))).stdout).actors.map((a: { id: string }) => a.id)).toContain('ann');
    // Nowhere to be found: the error names the root it tried and why.
    const lost = await hive(['status'], tempDir());
    expect(lost.code).toBe(1);
    expect(lost.stderr).toMatch(/is not a hive .*\(root .*\.hive: no --root, no \$HIVE_ROOT, and no hive in .* or a folder above it\) \[E_NOT_A_HIVE\]/);
  }, 60_000);

  it('--json on init, send and answer parses; hive start --json stamps events with ISO times', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    expect(JSON.parse((await hive(['init', '--root', root, '--json'], dir)).stdout)).toEqual({ root });
    const sent = JSON.parse((await hive(['send', '--root', root, '--from', 'god', '--to', 'god', '--act', 'inform', '--body', 'hi', '--json'], dir)).stdout);
    expect(sent).toMatchObject({ id: expect.any(String), conversation: expect.any(String) });
    expect(sent.created_at).toMatch(ISO);
    // A question to god, answered with --json.
    expect((await hive(['spawn', '--root', root, '--id', 'asker', '--brain', 'external'], dir)).code).toBe(0);
    const q = JSON.parse((await hive(['send', '--root', root, '--from', 'asker', '--to', 'god', '--act', 'query', '--body', 'ok?', '--json'], dir)).stdout);
    const config = path.join(dir, 'hive.config.json');
    fs.writeFileSync(config, JSON.stringify({ root, agents: [{ id: 'asker', brain: { kind: 'external' } }], inspector: { enabled: false } }));
    const start = spawn(process.execPath, [BIN, 'start', '--config', config, '--json', '--quiet'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const events: { event: string; at: string }[] = [];
    const delivered = new Promise<void>((resolve) =>
      readline.createInterface({ input: start.stdout }).on('line', (l) => {
        events.push(JSON.parse(l));
        if (events.some((e) => e.event === 'ready')) resolve();
      }),
    );
    await delivered;
    let answered = await hive(['answer', q.id, '--body', 'yes', '--root', root, '--json'], dir);
    for (let i = 0; i < 50 && answered.code !== 0; i++) {
      await new Promise((r) => setTimeout(r, 200)); // the question reaches god's inbox first
      answered = await hive(['answer', q.id, '--body', 'yes', '--root', root, '--json'], dir);
    }
    expect(answered.code, answered.stderr).toBe(0);
    expect(JSON.parse(answered.stdout)).toMatchObject({ id: expect.any(String), question: q.id });
    start.kill('SIGINT');
    await new Promise((r) => start.once('close', r));
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect(e.at).toMatch(ISO);
  }, 60_000);

  it('a reader that goes away (hive log | head) ends the command quietly, exit 0', async () => {
    const root = path.join(tempDir(), 'hive');
    expect((await hive(['init', '--root', root], path.dirname(root))).code).toBe(0);
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ at: new Date().toISOString(), type: 'message.routed', id: `m${i}` })).join('\n');
    fs.appendFileSync(path.join(root, 'log.jsonl'), `${lines}\n`);
    const child = spawn(process.execPath, [BIN, 'log', '--root', root], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.stdout.once('data', () => child.stdout.destroy()); // `head -1` got its line and left
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  }, 60_000);

  it('colour only for people: none when piped or with NO_COLOR, on with FORCE_COLOR; hive start says what is starting before it is ready', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    expect((await hive(['init', '--root', root], dir)).code).toBe(0);
    expect((await hive(['spawn', '--root', root, '--id', 'ann', '--brain', 'echo'], dir)).code).toBe(0);
    const ESC = '\x1b[';
    expect((await hive(['status', '--root', root], dir, { FORCE_COLOR: '' })).stdout).not.toContain(ESC); // piped
    expect((await hive(['status', '--root', root], dir, { FORCE_COLOR: '1' })).stdout).toContain(ESC);
    expect((await hive(['status', '--root', root], dir, { FORCE_COLOR: '', NO_COLOR: '1' })).stdout).not.toContain(ESC);

    const config = path.join(dir, 'hive.config.json');
    fs.writeFileSync(config, JSON.stringify({ root: './hive2', agents: [0, 1, 2].map((i) => ({ id: `e${i}`, brain: { kind: 'echo' } })), inspector: { enabled: false } }));
    const start = spawn(process.execPath, [BIN, 'start', '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '' } });
    const order: string[] = [];
    readline.createInterface({ input: start.stderr }).on('line', (l) => order.push(`err ${l}`));
    const ready = new Promise<void>((resolve) =>
      readline.createInterface({ input: start.stdout }).on('line', (l) => {
        order.push(`out ${l}`);
        if (l.startsWith('hive ready')) resolve();
      }),
    );
    await ready;
    start.kill('SIGINT');
    await new Promise((r) => start.once('close', r));
    const readyAt = order.findIndex((l) => l.startsWith('out hive ready'));
    const before = order.slice(0, readyAt);
    expect(before[0]).toBe(`err hive: starting 3 agent(s) from ${config}`);
    expect(before.some((l) => /^err hive: 3\/3 agents up \(\d+ ms\)$/.test(l))).toBe(true);
    expect(before.some((l) => /^err hive: routing \(\d+ ms\)$/.test(l))).toBe(true);
    expect(order.join('\n')).not.toContain(ESC);
  }, 60_000);

  it('every command that prints a result prints JSON with --json (one document, or one per line for the log)', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'hive');
    const run = async (args: string[]) => {
      const r = await hive([...args, '--root', root, '--json'], dir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    const one = async (args: string[]) => JSON.parse(await run(args)) as Record<string, unknown>;
    expect(await one(['init'])).toEqual({ root });
    expect(await one(['spawn', '--id', 'ann', '--brain', 'echo'])).toMatchObject({ id: 'ann', running: false });
    expect(await one(['spawn', '--id', 'ext', '--brain', 'external'])).toMatchObject({ id: 'ext', token: expect.any(String) });
    expect(await one(['token', 'ext'])).toMatchObject({ agent: 'ext', token: expect.any(String) });
    const sent = await one(['send', '--from', 'ext', '--to', 'ann', '--act', 'request', '--body', 'hi']);
    expect(sent.id).toEqual(expect.any(String)); // in ext's outbox: no hive runs to deliver it
    expect(await one(['inbox', 'ann'])).toMatchObject({ agent: 'ann', cursor: 0, messages: [] });
    expect(await one(['status'])).toMatchObject({ root, running: false });
    expect(await one(['ask'])).toEqual({ questions: [] });
    expect(await one(['dead-letter', 'list'])).toEqual({ deadLetters: [] });
    expect(await one(['sessions'])).toMatchObject({ archived: [], snapshots: [] });
    expect((await one(['memory', 'add', 'ann', 'A fact worth keeping'])).size).toEqual(expect.any(Number));
    expect(await one(['memory', 'search', 'fact'])).toMatchObject({ matches: [expect.objectContaining({ agent: 'ann' })] });
    expect(await one(['memory', 'status'])).toBeTypeOf('object');
    expect(await one(['stop', 'ann'])).toEqual({ stopped: 'ann' });
    const diagram = await hive(['diagram', 'router', '--out', path.join(dir, 'router.svg'), '--json'], dir); // no hive needed: no --root
    expect(JSON.parse(diagram.stdout)).toEqual({ machine: 'router', file: path.join(dir, 'router.svg') });
    // The log: one JSON object a line (empty here: nothing ran that logs).
    for (const l of (await run(['log'])).split('\n').filter(Boolean)) expect((JSON.parse(l) as { at: string }).at).toMatch(ISO);
  }, 60_000);

  it('every command has --help with its usage; a mistyped command gets a suggestion; --version', async () => {
    const dir = tempDir();
    const help = await hive(['--help'], dir);
    expect(help.code).toBe(0);
    const names = [...new Set([...help.stdout.matchAll(/^  hive ([a-z-]+)/gm)].map((m) => m[1]!))];
    expect(names.length).toBeGreaterThan(20);
    for (const name of names) {
      const r = await hive([name, '--help'], dir);
      expect(r.code, `${name} --help: ${r.stderr}`).toBe(0);
      expect(r.stdout, name).toMatch(new RegExp(`^usage: hive ${name}`));
    }
    const typo = await hive(['stauts'], dir);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('did you mean `hive status`?');
    expect((await hive(['--version'], dir)).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  }, 120_000);
});
