import fs from 'node:fs';
import { agentPaths } from '../src/layout/paths.ts';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES, runHive } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { createHive } from '../src/hive.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { readLog } from '../src/log/read.ts';
import type { HiveConfigInput } from '../src/config/schema.ts';

/** Agent CLIs run through presets: fixture CLIs that follow each one's documented formats. */

const client = { id: 'client', brain: { kind: 'external' as const } };
type Preset = 'claude' | 'codex' | 'gemini';

function setup(preset: Preset) {
  const dir = tempDir();
  const cwd = path.join(dir, 'work');
  fs.mkdirSync(cwd);
  const log = path.join(dir, 'calls.jsonl');
  process.env.FAKE_CLI_LOG = log; // the workers' providers inherit it
  const config = (extra: Partial<HiveConfigInput> = {}): HiveConfigInput =>
    fastConfig({ root: path.join(dir, 'hive'), agents: [{ id: 'coder', brain: { kind: 'command', preset, command: path.join(FIXTURES, 'cli', `fake-${preset}.mjs`), cwd } }, client], ...extra });
  const calls = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);
  return { dir, cwd, root: path.join(dir, 'hive'), config, calls };
}

const replies = (root: string) => readInbox(root, 'client', 0).entries.map((e) => e.message);

describe('agent CLI presets', () => {
  for (const preset of ['claude', 'codex', 'gemini'] as const) {
    it(`${preset}: a turn works; after a restart the next turn resumes the CLI's own session with only the new message`, async () => {
      const t = setup(preset);
      let hive = await startHive(t.config());
      await hive.send({ from: 'client', to: 'coder', act: 'request', body: 'first task' });
      await waitFor(hive, () => replies(t.root).length === 1, 'the first reply');
      expect(replies(t.root)[0]!.body).toBe('heard "first task" (turn 1 of this session)');
      await hive.close();
      hive = await startHive(t.config());
      await hive.send({ from: 'client', to: 'coder', act: 'request', body: 'second task' });
      await waitFor(hive, () => replies(t.root).length === 2, 'the second reply');
      expect(replies(t.root)[1]!.body).toBe('heard "second task" (turn 2 of this session)');
      const [first, second] = t.calls();
      expect(first).toMatchObject({ resume: null, fullPrompt: true });
      expect(second).toMatchObject({ resume: first!.session, session: first!.session, fullPrompt: false });
      expect(second!.promptChars as number).toBeLessThan(first!.promptChars as number);
      await hive.close();
    });
  }

  it('a .claude folder in the agent folder replaced by a symlink: that agent fails with the reason, the hive starts, nothing is written through it', async () => {
    const t = setup('claude');
    const config = fastConfig({ root: t.root, agents: [{ id: 'coder', brain: { kind: 'command', preset: 'claude', command: path.join(FIXTURES, 'cli', 'fake-claude.mjs') } }, client, { id: 'echo', brain: { kind: 'echo' } }] });
    await (await startHive(config)).close();
    const dotClaude = path.join(agentPaths(t.root, 'coder').dir, '.claude');
    expect(fs.existsSync(path.join(dotClaude, 'settings.json'))).toBe(true);
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'settings.json'), '{"theme":"mine"}\n');
    fs.rmSync(dotClaude, { recursive: true });
    fs.symlinkSync(outside, dotClaude);
    const hive = await startHive(config);
    await waitFor(hive, () => /^failed: .*\.claude is a symbolic link, not a folder/.test(hive.status().find((s) => s.id === 'coder')?.status ?? ''), 'coder failed with the reason');
    const req = await hive.send({ from: 'client', to: 'echo', act: 'request', body: 'the rest runs' });
    await waitFor(hive, () => replies(t.root).some((m) => m.in_reply_to === req.id), 'echo answers');
    expect(fs.readFileSync(path.join(outside, 'settings.json'), 'utf8')).toBe('{"theme":"mine"}\n');
    await hive.close();
  });

  it("the CLI's session follows the conversation: archived, a new one starts; reopened, the old one resumes", async () => {
    const t = setup('claude');
    const hive = await startHive(t.config());
    const turn = async (body: string, n: number) => {
      await hive.send({ from: 'client', to: 'coder', act: 'request', body });
      await waitFor(hive, () => replies(t.root).length === n, `reply ${n}`);
      return t.calls().at(-1)!;
    };
    const a = await turn('one', 1);
    const archived = await runHive(['archive', 'coder', '--root', t.root, '--json']);
    expect(archived.code, archived.stderr).toBe(0);
    const key = (JSON.parse(archived.stdout) as { archived: { key: string } }).archived.key;
    const b = await turn('two', 2);
    expect(b).toMatchObject({ resume: null, fullPrompt: true });
    expect(b.session).not.toBe(a.session);
    const reopened = await runHive(['reopen', key, '--root', t.root]);
    expect(reopened.code, reopened.stderr).toBe(0);
    const c = await turn('three', 3);
    expect(c).toMatchObject({ resume: a.session, turns: 2, fullPrompt: false });
  });

  it('a session the CLI lost falls back to a new session with the whole prompt (history included), and the log says so', async () => {
    const t = setup('codex');
    const hive = await startHive(t.config());
    await hive.send({ from: 'client', to: 'coder', act: 'request', body: 'remember kumquats' });
    await waitFor(hive, () => replies(t.root).length === 1, 'the first reply');
    fs.writeFileSync(path.join(t.cwd, '.fake-cli', 'codex', 'forget'), '');
    await hive.send({ from: 'client', to: 'coder', act: 'request', body: 'what did I say?' });
    await waitFor(hive, () => replies(t.root).length === 2, 'the reply after the loss');
    expect(replies(t.root)[1]!.body).toBe('heard "what did I say?" (turn 1 of this session)');
    const calls = t.calls();
    expect(calls.map((c) => [c.lost ?? false, c.fullPrompt])).toEqual([[false, true], [true, false], [false, true]]);
    expect(calls[2]).toMatchObject({ resume: null, history: true }); // the conversation so far, in the new session's prompt
    const lost = readLog(hive.root).filter((e) => e.type === 'brain.session-lost');
    expect(lost).toMatchObject([{ agent: 'coder', preset: 'codex', session: calls[0]!.session }]);
  });

  it("claude: hooks and the MCP server are merged into the user's own files, the Stop hook reaches the hive, and archiving removes only Hive's entries", async () => {
    const t = setup('claude');
    const mine = { permissions: { allow: ['Bash(ls)'] }, hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo mine' }] }] } };
    const mineMcp = { mcpServers: { other: { command: 'other-server', args: [] } } };
    fs.mkdirSync(path.join(t.cwd, '.claude'));
    fs.writeFileSync(path.join(t.cwd, '.claude', 'settings.json'), JSON.stringify(mine));
    fs.writeFileSync(path.join(t.cwd, '.mcp.json'), JSON.stringify(mineMcp));
    let hive = await startHive(t.config());
    const settings = JSON.parse(fs.readFileSync(path.join(t.cwd, '.claude', 'settings.json'), 'utf8'));
    // `-p` approves nothing by itself: the project's hive server is enabled and its tools allowed, beside the user's rules.
    expect(settings.permissions).toEqual({ allow: ['Bash(ls)', 'mcp__hive'] });
    expect(settings.enabledMcpjsonServers).toEqual(['hive']);
    expect(Object.keys(settings.hooks).sort()).toEqual(['Notification', 'PostToolUse', 'PreToolUse', 'SessionStart', 'Stop']);
    expect(settings.hooks.Stop[0]).toEqual(mine.hooks.Stop[0]);
    expect(settings.hooks.Stop[1].hooks[0].command).toMatch(/hive" hook --agent coder$/);
    // hive doctor: the CLI found, every entry in place.
    const mcp = JSON.parse(fs.readFileSync(path.join(t.cwd, '.mcp.json'), 'utf8'));
    expect(mcp.mcpServers.other).toEqual(mineMcp.mcpServers.other);
    expect(mcp.mcpServers.hive).toMatchObject({ args: ['mcp'], env: { HIVE_ROOT: t.root, AGENT_ID: 'coder', HIVE_AGENT_TOKEN: '${HIVE_AGENT_TOKEN}' } });
    // A turn: the fixture runs the Stop hook command the file names; it reaches the hooks socket.
    await hive.send({ from: 'client', to: 'coder', act: 'request', body: 'hello' });
    await waitFor(hive, () => replies(t.root).length === 1, 'the reply');
    expect(t.calls()[0]!.hook).toEqual(['mine', '{"ok":true}']); // the user's own Stop hook ran too
    // hive doctor: the CLI found, every entry in place.
    const doctor = await runHive(['doctor', 'coder', '--root', t.root, '--json']);
    expect(doctor.code, doctor.stderr).toBe(0);
    expect((JSON.parse(doctor.stdout) as { installed: unknown[] }).installed).toHaveLength(6);
    await hive.close();
    // Removed from the config: archived, and the user's files are what they were.
    hive = await startHive({ ...t.config(), agents: [client] });
    expect(JSON.parse(fs.readFileSync(path.join(t.cwd, '.claude', 'settings.json'), 'utf8'))).toEqual(mine);
    expect(JSON.parse(fs.readFileSync(path.join(t.cwd, '.mcp.json'), 'utf8'))).toEqual(mineMcp);
    await hive.close();
  });

  it("a preset agent moved to another working directory leaves the old one as the user had it", async () => {
    const t = setup('gemini');
    const other = path.join(t.dir, 'other');
    fs.mkdirSync(other);
    const file = (cwd: string) => path.join(cwd, '.gemini', 'settings.json');
    fs.mkdirSync(path.dirname(file(t.cwd)));
    fs.writeFileSync(file(t.cwd), JSON.stringify({ theme: 'dark' }));
    let hive = await startHive(t.config());
    expect(JSON.parse(fs.readFileSync(file(t.cwd), 'utf8')).mcpServers.hive).toBeDefined();
    await hive.close();
    const moved = t.config();
    (moved.agents![0]!.brain as { cwd: string }).cwd = other;
    hive = await startHive(moved);
    expect(JSON.parse(fs.readFileSync(file(t.cwd), 'utf8'))).toEqual({ theme: 'dark' });
    expect(JSON.parse(fs.readFileSync(file(other), 'utf8')).mcpServers.hive.env.AGENT_ID).toBe('coder');
    await hive.close();
  });

  it('codex and gemini: their config files get the MCP server (and gemini the hooks) beside what is there; archived, only that is removed', async () => {
    for (const preset of ['codex', 'gemini'] as const) {
      const t = setup(preset);
      const file = preset === 'codex' ? path.join(t.cwd, '.codex', 'config.toml') : path.join(t.cwd, '.gemini', 'settings.json');
      const original = preset === 'codex' ? 'model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n' : JSON.stringify({ theme: 'dark', mcpServers: { docs: { command: 'docs-server' } } });
      fs.mkdirSync(path.dirname(file));
      fs.writeFileSync(file, original);
      let hive = await startHive(t.config());
      const text = fs.readFileSync(file, 'utf8');
      expect(text).toContain(preset === 'codex' ? '[mcp_servers.docs]' : '"docs"');
      expect(text).toContain(preset === 'codex' ? '[mcp_servers.hive]' : '"hive"');
      if (preset === 'gemini') expect(Object.keys(JSON.parse(text).hooks).sort()).toEqual(['AfterAgent', 'AfterTool', 'BeforeTool', 'Notification', 'SessionStart']);
      await hive.close();
      hive = await startHive({ ...t.config(), agents: [client] });
      const left = fs.readFileSync(file, 'utf8');
      if (preset === 'codex') expect(left).toBe(original);
      else expect(JSON.parse(left)).toEqual(JSON.parse(original));
      await hive.close();
    }
  });

  it('a preset whose CLI is not on PATH is a configuration error naming the CLI and the preset', async () => {
    const dir = tempDir();
    const hive = createHive(fastConfig({ root: path.join(dir, 'hive'), agents: [{ id: 'coder', brain: { kind: 'command', preset: 'claude', env: { PATH: dir } } }] }));
    const err = await hive.start().then(() => null, (e: unknown) => e as { code: string; message: string });
    await hive.close();
    expect(err?.code).toBe('E_BAD_CONFIG');
    expect(err?.message).toContain('Agent "coder": Claude Code (preset claude): brain command "claude" is not on PATH');
    const doctor = await runHive(['doctor', 'coder', '--root', path.join(dir, 'hive')], { env: { PATH: dir } });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/missing +brain command "claude" is not on PATH/);
  });
});
