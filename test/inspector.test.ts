import fs from 'node:fs';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { fastConfig, startHive, waitFor } from './helpers/hive.ts';
import { FIXTURES, REPO } from './helpers/fixture.ts';
import { tempDir } from './helpers/temp.ts';
import { startInspector } from '../src/inspector/server.ts';
import { readInbox } from '../src/queue/inbox.ts';
import { agentPaths } from '../src/layout/paths.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const OUTPUT = path.join(REPO, 'test-output');

function requireChromium(): void {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Debian's chromium is not installed at ${CHROMIUM}: run \`apt-get update && apt-get install -y chromium\` (.ci/run does this before npm ci). This test does not skip.`);
  }
}

describe('visual inspector in headless Chromium', () => {
  it('shows every actor, highlights live state changes, answers an ASK ME card into the asker inbox; no token → 401', async () => {
    requireChromium();
    const hive = await startHive(
      fastConfig({
        agents: [
          { id: 'gated', brain: { kind: 'module', module: path.join(FIXTURES, 'brains', 'gated.ts') } },
          { id: 'echo', brain: { kind: 'echo' } },
          { id: 'asker', brain: { kind: 'external' } },
          { id: 'mach', brain: { kind: 'machine', module: path.join(FIXTURES, 'machines', 'counter.ts') } },
        ],
      }),
    );
    const inspector = await startInspector(hive);
    const base = `http://127.0.0.1:${inspector.port}`;
    const context = await chromium.launchPersistentContext(tempDir('hive-chromium-'), { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1400, height: 1000 } });
    try {
      // Without the token (or with a wrong one) every resource answers 401.
      for (const p of ['/', '/api/state', '/api/events', '/assets/app.js', '/api/machines', '/?token=wrong']) {
        expect((await fetch(`${base}${p}`)).status, p).toBe(401);
      }
      expect((await fetch(`${base}/api/answer`, { method: 'POST', body: '{}' })).status).toBe(401);
      expect(inspector.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);

      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(inspector.url);
      await page.waitForSelector('body[data-ready="true"]');
      // Agents are on the page; the runtime's own actors are there too, in the collapsed Runtime section.
      for (const a of hive.status()) await page.waitForSelector(`.actor[data-actor="${a.id}"]`, { state: ['router', 'miner', 'reflector'].includes(a.kind) ? 'attached' : 'visible' });
      expect(await page.locator('#runtime').getAttribute('open')).toBeNull();
      expect(await page.locator('.actor').count()).toBe(hive.status().length);
      expect(await page.locator('.host').count()).toBe(hive.supervisor.hostStatus().length);
      // Agents and the router are drawn with their machines; passive agents say so.
      expect(await page.locator('.actor[data-actor="gated"] svg .state').count()).toBeGreaterThanOrEqual(6);
      expect(await page.locator('.actor[data-actor="router"] svg .state[data-state="routing"]').count()).toBe(1);

      // The highlighted state of an actor's diagram (the page's CSP forbids string eval: use locators).
      const highlighted = (actor: string, state: string) => page.locator(`.actor[data-actor="${actor}"] .state.active[data-state="${state}"]`).waitFor();
      await highlighted('gated', 'idle');

      // A message puts `gated` in `thinking` until the gate opens; the page follows live.
      await hive.send({ from: 'asker', to: 'gated', act: 'request', subject: 'Work', body: 'hold on' });
      await highlighted('gated', 'thinking');
      fs.writeFileSync(path.join(agentPaths(hive.root, 'gated').dir, 'gate'), '');
      await highlighted('gated', 'idle');
      await page.locator('#flow svg .msg').first().waitFor({ state: 'attached' }); // a line: no height, never "visible"

      // A machine agent's card draws its own machine, highlights where it is, and follows it
      // live; the turn loop stays as a folded secondary line.
      const own = (state: string) => page.locator(`.actor[data-actor="mach"] .own-diagram .state.active[data-state="${state}"]`).waitFor();
      await own('counting');
      expect(await page.locator('.actor[data-actor="mach"] .own-diagram svg .state[data-state="armed"]').count()).toBe(1);
      expect(await page.locator('.actor[data-actor="mach"] details.loop .diagram svg .state[data-state="thinking"]').count()).toBe(1);
      await hive.send({ from: 'asker', to: 'mach', act: 'request', body: 'arm' });
      await own('armed');
      expect(await page.locator('.actor[data-actor="mach"] .own-diagram .state.active').count()).toBe(1);
      await page.locator('.actor[data-actor="mach"] .recent li', { hasText: 'hive.request counting → armed' }).waitFor();
      expect(await page.locator('.actor[data-actor="mach"] .value').textContent()).toBe('armed');
      await page.locator('.actor[data-actor="mach"] .own-context', { hasText: 'count' }).waitFor();

      // ASK ME: a question to god appears as a card; answering it on the page delivers an
      // inform from god, in reply to the question and in its conversation, to the asker.
      const q = await hive.send({ from: 'asker', to: 'god', act: 'query', needs_human: true, subject: 'Tone?', body: 'Which tone should the announcement take?' });
      const card = page.locator(`.ask[data-question="${q.id}"]`);
      await card.waitFor();
      await page.screenshot({ path: path.join(OUTPUT, 'inspector.png'), fullPage: true });
      await card.locator('textarea').fill('Formal, please.');
      await card.locator('button').click();
      await waitFor(hive, () => readInbox(hive.root, 'asker', 0).entries.some((e) => e.message.in_reply_to === q.id), 'the answer in the asker inbox');
      const answer = readInbox(hive.root, 'asker', 0).entries.find((e) => e.message.in_reply_to === q.id)!.message;
      expect(answer).toMatchObject({ from: 'god', to: 'asker', act: 'inform', body: 'Formal, please.', conversation: q.conversation, subject: 'Re: Tone?' });
      // The card stays and says what became of its question; it can no longer be answered.
      await page.locator(`.ask[data-question="${q.id}"][data-state="answered"]`).waitFor();
      expect(await card.locator('button').isDisabled()).toBe(true);
      // Answering it again is refused: it was answered.
      const again = await fetch(`${base}/api/answer`, { method: 'POST', headers: { 'x-hive-token': inspector.token, 'content-type': 'application/json' }, body: JSON.stringify({ id: q.id, body: 'twice' }) });
      expect(again.status).toBe(409);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await inspector.close();
    }
  }, 90_000);

  it('the operator console: people first, a conversation with every message and its full body, search, god\'s inbox, a dead letter retried from the page; fits 1440×900', async () => {
    requireChromium();
    const script = path.join(tempDir(), 'llm.sh');
    fs.writeFileSync(script, '#!/bin/sh\ncat > /dev/null\necho "thinking..." >&2\necho "a considered answer"\n', { mode: 0o755 });
    const hive = await startHive(
      fastConfig({
        agents: [
          ...[0, 1, 2].map((i) => ({ id: `echo-${i}`, brain: { kind: 'echo' as const } })),
          { id: 'llm', brain: { kind: 'command' as const, command: script } },
          { id: 'client', brain: { kind: 'external' as const } },
        ],
      }),
    );
    const inspector = await startInspector(hive);
    const context = await chromium.launchPersistentContext(tempDir('hive-chromium-'), { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1440, height: 900 } });
    try {
      const body = 'First line of the request.\nSecond line, which a tooltip would have hidden.';
      const req = await hive.send({ from: 'client', to: 'echo-1', act: 'request', subject: 'Report', body });
      await waitFor(hive, () => readInbox(hive.root, 'client', 0).entries.some((e) => e.message.in_reply_to === req.id), 'the reply');
      const note = await hive.send({ from: 'client', to: 'god', act: 'inform', subject: 'Result', body: 'The report is ready: 42 pages.' });
      const asked = await hive.send({ from: 'client', to: 'llm', act: 'request', body: 'What should we ship first?' });
      await waitFor(hive, () => readInbox(hive.root, 'client', 0).entries.some((e) => e.message.in_reply_to === asked.id), 'the llm agent answers');
      const lost = await hive.send({ from: 'client', to: 'late', act: 'request', body: 'for an agent not spawned yet' });
      await waitFor(hive, () => hive.deadLetters().some((d) => d.reason?.code === 'E_UNKNOWN_AGENT'), 'the unknown recipient dead-lettered');
      await hive.spawn({ id: 'late', brain: { kind: 'echo' } });

      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(inspector.url);
      await page.waitForSelector('body[data-ready="true"]');
      // People first: god's inbox (with the full body) and the dead letters come before the agents.
      await page.locator('#god .message', { hasText: 'The report is ready: 42 pages.' }).waitFor();
      const top = async (sel: string) => (await page.locator(sel).boundingBox())!.y;
      expect(await top('#god')).toBeLessThan(await top('#actors'));
      expect(await top('#dead')).toBeLessThan(await top('#actors'));

      // Search by text, then open the conversation: both messages in order, full bodies, who handled them.
      await page.fill('#search', 'tooltip would have hidden');
      await page.press('#search', 'Enter');
      const hit = page.locator(`#search-results .message[data-id="${req.id}"]`); // the echo's reply quotes it too
      await hit.waitFor();
      expect(await page.locator('#search-results .message').count()).toBe(2);
      await hit.click();
      await page.locator('#conversation .message').nth(1).waitFor();
      const items = page.locator('#conversation .message');
      expect(await items.count()).toBe(2);
      expect(await items.nth(0).getAttribute('data-id')).toBe(req.id);
      expect(await items.nth(0).locator('.body').innerText()).toBe(body);
      expect(await items.nth(0).locator('.meta').innerText()).toContain('echo-1 #1 ✓');
      expect(await items.nth(1).locator('.meta').innerText()).toContain(`in reply to ${req.id}`);
      // When it was delivered and the turn that handled it (from the event log).
      expect(await items.nth(0).locator('.timeline').innerText()).toMatch(/^echo-1: delivered \d\d:\d\d:\d\d\.\d{3} · handled in the turn committed \d\d:\d\d:\d\d\.\d{3} \(thought \d+ ms, sent 1\)$/);
      expect(await page.locator('#conversation-id').innerText()).toBe(req.conversation);
      await page.screenshot({ path: path.join(OUTPUT, 'inspector-console-1440x900.png') });

      // An LLM agent's turns: the input, the process and its time, stderr, the output.
      const llm = page.locator('.actor[data-actor="llm"]');
      await llm.locator('.turns-box summary').click();
      await llm.locator('.turn-input', { hasText: 'What should we ship first?' }).waitFor();
      expect(await llm.locator('.turn-output').last().innerText()).toBe('a considered answer');
      expect(await llm.locator('.turn-stderr').last().innerText()).toBe('thinking...');
      expect(await llm.locator('.turns').innerText()).toMatch(new RegExp(`${script.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} exited 0 in \\d+ ms`));

      // A dead letter retried from the page reaches the agent spawned since, once.
      const row = page.locator('#dead tbody tr', { hasText: 'E_UNKNOWN_AGENT' });
      await row.locator('button[data-action="retry"]').click();
      await page.locator('#dead-status', { hasText: 'retried as' }).waitFor();
      await row.waitFor({ state: 'detached' }); // archived: it left the table
      await waitFor(hive, () => readInbox(hive.root, 'client', 0).entries.some((e) => e.message.from === 'late' && e.message.body.includes(lost.body)), 'answered by the agent spawned since');
      expect(hive.deadLetters().some((d) => d.reason?.code === 'E_UNKNOWN_AGENT')).toBe(false);

      // The hive's agents fit in two screens of 1440×900 (conversation closed, turns folded).
      await page.click('#conversation-close');
      await llm.locator('.turns-box summary').click();
      const height = (await page.locator('body').boundingBox())!.height;
      expect(height).toBeLessThanOrEqual(2 * 900);
      expect(note.id).toBeTruthy();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await inspector.close();
    }
  }, 90_000);

  it('hive start prints the inspector URL in its ready line; the URL works with its token only', async () => {
    const dir = tempDir();
    const config = path.join(dir, 'hive.config.ts');
    fs.writeFileSync(config, `export default { root: './hive', agents: [{ id: 'echo', brain: { kind: 'echo' } }], audit: { enabled: false } };\n`);
    const child = spawn(process.execPath, [path.join(REPO, 'scripts', 'hive.mjs'), 'start', '--config', config], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const ready = await new Promise<string>((resolve, reject) => {
      readline.createInterface({ input: child.stdout }).on('line', (l) => l.startsWith('hive ready:') && resolve(l));
      void exited.then((code) => reject(new Error(`hive start exited ${code}: ${stderr}`)));
    });
    const url = /inspector=(\S+)/.exec(ready)?.[1];
    expect(ready, ready).toMatch(/^hive ready: root=\S+ agents=1 pid=\d+ inspector=http:\/\/127\.0\.0\.1:\d+\/\?token=\S+ \(Ctrl-C to stop\)$/);
    const withToken = await fetch(url!);
    expect(withToken.status).toBe(200);
    expect(await withToken.text()).toContain('Hive inspector');
    expect((await fetch(url!.replace(/\?token=.*/, ''))).status).toBe(401);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 60_000);
});
