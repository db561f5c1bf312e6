import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import ts from 'typescript';
import { REPO } from './helpers/fixture.ts';
import os from 'node:os';

/**
 * The package as a consumer gets it: `npm pack` (which builds dist/), installed into fresh
 * projects — one with "type": "module", one as `npm init -y` leaves it (CommonJS) — and
 * used there on plain Node 20: no loader, no TypeScript of Hive's compiled at run time,
 * hoisted dependencies, the installed package read-only.
 */

const NAME = 'hive-runtime';
let work = '';
let tarball = '';
const projects: Record<'esm' | 'cjs', string> = { esm: '', cjs: '' };

function run(cwd: string, file: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeout?: number } = {}): string {
  return execFileSync(file, args, { cwd, encoding: 'utf8', env: { ...process.env, ...options.env }, timeout: options.timeout ?? 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

const npm = (cwd: string, args: string[]) => run(cwd, 'npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error']);
const node = (cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) => run(cwd, process.execPath, args, { env });
const hive = (cwd: string, args: string[]) => node(cwd, [path.join(cwd, 'node_modules', '.bin', 'hive'), ...args]);

/** A file every project gets: a module brain in plain JavaScript, importing the package as users do. */
const MJS_BRAIN = `import { defineBrain } from '${NAME}/brain';
export default defineBrain((input, ctx) => {
  if (input.kind === 'message' && input.message.act === 'request') ctx.reply(\`mjs brain heard: \${input.message.body}\`);
});
`;

const APP = `import { createHive } from '${NAME}';
const hive = createHive({
  root: './app-hive',
  audit: { enabled: false },
  agents: [{ id: 'echo', brain: { kind: 'echo' } }, { id: 'mod', brain: { kind: 'module', module: './brain.mjs' } }, { id: 'me', brain: { kind: 'external' } }],
});
await hive.start();
const replies = {};
const both = new Promise((resolve) => hive.on('delivered', (d) => { if (d.agent === 'me') { replies[d.from] = d.body; if (Object.keys(replies).length === 2) resolve(); } }));
await hive.send({ from: 'me', to: 'echo', act: 'request', body: 'ping' });
await hive.send({ from: 'me', to: 'mod', act: 'request', body: 'pong' });
await both;
await hive.close();
console.log(JSON.stringify(replies));
`;

/** `hive start --config FILE` from a project's installed bin: wait on its output, stop it with SIGINT (its exit code). */
function startBin(dir: string, config: string) {
  const child = spawn(process.execPath, [path.join(dir, 'node_modules', '.bin', 'hive'), 'start', '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    async until(check: (out: string) => boolean, what: string): Promise<void> {
      const end = Date.now() + 30_000;
      while (!check(out)) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`${what}: ${out}\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop(): Promise<number | null> {
      child.kill('SIGINT');
      return exited;
    },
  };
}

function project(kind: 'esm' | 'cjs'): string {
  const dir = path.join(work, kind);
  fs.mkdirSync(dir);
  if (kind === 'esm') fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer-esm', version: '1.0.0', private: true, type: 'module' }));
  else npm(dir, ['init', '-y']);
  npm(dir, ['install', tarball, '@types/node@20.19.43']);
  fs.writeFileSync(path.join(dir, 'brain.mjs'), MJS_BRAIN);
  fs.writeFileSync(path.join(dir, 'app.mjs'), APP);
  // A read-only install: nothing may be written into the package's own folder.
  execFileSync('chmod', ['-R', 'a-w', path.join(dir, 'node_modules', NAME)]);
  return dir;
}

beforeAll(() => {
  // Not tempDir(): that one is removed after each test, and these projects serve them all.
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-consumer-'));
  // Packed from a copy of the checkout: `prepare` (the build) empties and refills dist/,
  // and other test files running meanwhile resolve `hive-runtime/*` from this checkout's
  // dist/ (a machine-kill test once failed to compile its fixture in that window).
  const copy = path.join(work, 'checkout');
  const skip = new Set(['node_modules', '.git', 'dist', 'test-output']);
  fs.cpSync(REPO, copy, { recursive: true, filter: (from) => !skip.has(path.relative(REPO, from).split(path.sep)[0]!) });
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(copy, 'node_modules'));
  npm(copy, ['pack', '--pack-destination', work]); // runs `prepare`: the build
  tarball = path.join(work, fs.readdirSync(work).find((f) => f.endsWith('.tgz'))!);
  projects.esm = project('esm');
  projects.cjs = project('cjs');
}, 300_000);

afterAll(() => {
  if (!work) return;
  execFileSync('chmod', ['-R', 'u+w', work]);
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the package in a consumer project', () => {
  it('ships dist, bin, README and LICENSE: no sources, tests, fixtures or benches', () => {
    const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    expect(new Set(files.map((f) => f.split('/')[0]))).toEqual(new Set(['dist', 'bin', 'README.md', 'LICENSE', 'package.json']));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/brain.d.ts', 'dist/workers/agent-host.mjs', 'dist/cli/main.mjs', 'dist/src/inspector/static/index.html']));
  });

  for (const kind of ['esm', 'cjs'] as const) {
    it(`(${kind}) a plain app.mjs with no loader runs createHive with an echo agent and a .mjs module brain, and gets both replies`, () => {
      const out = node(projects[kind], ['app.mjs']);
      expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual({ echo: 'ping', mod: 'mjs brain heard: pong' });
    }, 60_000);

    it(`(${kind}) the bin: --version, --help, a command's --help, init, send, status, start --config with a TypeScript config and brain`, async () => {
      const dir = projects[kind];
      const version = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version as string;
      expect(hive(dir, ['--version']).trim()).toBe(version);
      expect(hive(dir, ['--help'])).toContain('hive init');
      expect(hive(dir, ['send', '--help'])).toMatch(/^usage: hive send/);
      expect(hive(dir, ['init', '--root', 'cli-hive'])).toContain('hive ready at');
      expect(hive(dir, ['send', '--root', 'cli-hive', '--from', 'god', '--to', 'god', '--act', 'inform', '--body', 'hi']).trim()).toMatch(/^[0-9a-z]{26}$/);
      expect(hive(dir, ['status', '--root', 'cli-hive'])).toContain('not running');
      fs.writeFileSync(path.join(dir, 'brain.ts'), `import { defineBrain } from '${NAME}/brain';\nexport default defineBrain((input, ctx) => {\n  if (input.kind === 'message') ctx.reply(\`ts brain heard: \${input.message.body}\`);\n});\n`);
      fs.writeFileSync(
        path.join(dir, 'hive.config.ts'),
        `import { defineConfig } from '${NAME}';\nexport default defineConfig({ root: './start-hive', audit: { enabled: false }, inspector: { enabled: false },\n  agents: [{ id: 'ts', brain: { kind: 'module', module: './brain.ts' } }, { id: 'me', brain: { kind: 'external' } }] });\n`,
      );
      const started = startBin(dir, 'hive.config.ts');
      await started.until((out) => out.includes('hive ready'), 'the ready line');
      hive(dir, ['send', '--root', 'start-hive', '--from', 'me', '--to', 'ts', '--act', 'request', '--body', 'hello']);
      await started.until((out) => out.includes('ts brain heard: hello'), 'the TypeScript brain\'s reply');
      expect(await started.stop()).toBe(0);
      expect(fs.readdirSync(dir).filter((f) => f.startsWith('.hive.config-'))).toEqual([]); // the compiled config is gone
    }, 90_000);
  }

  it("(esm) a machine agent built with the project's own xstate runs under hive start; the project and Hive share one xstate", async () => {
    const dir = projects.esm;
    // xstate is Hive's peer dependency: installed once, at the project's top level.
    expect(fs.existsSync(path.join(dir, 'node_modules', 'xstate', 'package.json'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'node_modules', NAME, 'node_modules', 'xstate'))).toBe(false);
    const peer = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', NAME, 'package.json'), 'utf8')).peerDependencies as Record<string, string>;
    expect(peer.xstate).toMatch(/^\^5\./);
    fs.writeFileSync(
      path.join(dir, 'counter.ts'),
      `import { assign, setup } from 'xstate';
import { hiveReply, type HiveMachineEvent } from '${NAME}/machine';
` +
        `export default setup({ types: { context: {} as { n: number }, events: {} as HiveMachineEvent } }).createMachine({
` +
        `  initial: 'counting', context: { n: 0 },
` +
        `  states: { counting: { on: { 'hive.request': { actions: [assign({ n: ({ context }) => context.n + 1 }), hiveReply(({ context }) => \`machine count \${context.n}\`)] } } } },
});
`,
    );
    fs.writeFileSync(
      path.join(dir, 'machine.config.ts'),
      `import { defineConfig } from '${NAME}';
export default defineConfig({ root: './machine-hive', audit: { enabled: false }, inspector: { enabled: false },
  agents: [{ id: 'counter', brain: { kind: 'machine', module: './counter.ts' } }, { id: 'me', brain: { kind: 'external' } }] });
`,
    );
    const started = startBin(dir, 'machine.config.ts');
    await started.until((out) => out.includes('hive ready'), 'the ready line');
    for (const body of ['one', 'two']) hive(dir, ['send', '--root', 'machine-hive', '--from', 'me', '--to', 'counter', '--act', 'request', '--body', body]);
    await started.until((out) => out.includes('machine count 2'), "the machine's second reply");
    expect(await started.stop()).toBe(0);
    expect(JSON.parse(hive(dir, ['status', '--root', 'machine-hive', '--json'])).actors.find((a: { id: string }) => a.id === 'counter').machine).toBe('counting');
  }, 90_000);

  it('(esm) hive mcp from the installed bin serves its tools to the SDK client (the SDK is bundled: not installed)', async () => {
    const dir = projects.esm;
    expect(fs.existsSync(path.join(dir, 'node_modules', '@modelcontextprotocol'))).toBe(false);
    hive(dir, ['init', '--root', 'mcp-hive']);
    const token = (JSON.parse(hive(dir, ['token', 'god', '--root', 'mcp-hive', '--json'])) as { token: string }).token;
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const client = new Client({ name: 'consumer', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [path.join(dir, 'node_modules', '.bin', 'hive'), 'mcp'], cwd: dir, env: { PATH: process.env.PATH ?? '', HIVE_ROOT: 'mcp-hive', AGENT_ID: 'god', HIVE_AGENT_TOKEN: token } }),
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(8);
      const r = (await client.callTool({ name: 'list_agents', arguments: {} })) as { content: { text: string }[] };
      expect((JSON.parse(r.content[0]!.text) as { id: string }[]).map((a) => a.id)).toContain('god');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a strict TypeScript consumer type-checks against the shipped declarations, with public imports only', () => {
    const dir = projects.esm;
    fs.writeFileSync(
      path.join(dir, 'consumer.ts'),
      `import { createHive, type Hive, type HiveMessage, type ActorStatus, type RegistryEntry, type Question, type Delivery, type HiveEventMap } from '${NAME}';
import { defineBrain, type BrainInput } from '${NAME}/brain';
import { writeOutbox, createFsTransport, type Transport } from '${NAME}/low-level';
import { runChaos, type ChaosReport } from '${NAME}/chaos';
const hive: Hive = createHive({ root: './typed', agents: [{ id: 'echo', brain: { kind: 'echo' } }] });
const entry: Promise<RegistryEntry> = hive.spawn({ id: 'late', brain: { kind: 'echo' } });
const rows: ActorStatus[] = hive.status();
const open: Question[] = hive.questions();
hive.on('delivered', (d: Delivery) => void d.seq);
const seen: HiveEventMap['processed']['handled'] = [];
const brain = defineBrain((input: BrainInput, ctx) => { if (input.kind === 'message') ctx.reply(input.message.body); });
const t: Transport = createFsTransport('./typed');
const m: HiveMessage | undefined = undefined;
void [entry, rows, open, seen, brain, t, m, writeOutbox, runChaos as (o: never) => Promise<ChaosReport>];
`,
    );
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'] }, files: ['consumer.ts'] }));
    const tsc = path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
    expect(() => node(dir, [tsc, '-p', 'tsconfig.json'])).not.toThrow();
  }, 60_000);

  it('importing hive-runtime/brain loads none of the runtime (no supervisor, queues, esbuild, piscina, xstate, zod)', () => {
    const dir = projects.esm;
    const log = path.join(work, 'loaded.txt');
    fs.writeFileSync(path.join(dir, 'hooks.mjs'), `import fs from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); fs.appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`);
    fs.writeFileSync(path.join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`);
    node(dir, ['--import', './register.mjs', '--input-type=module', '-e', `const b = await import('${NAME}/brain'); if (typeof b.defineBrain !== 'function') process.exit(3);`]);
    const loaded = fs.readFileSync(log, 'utf8').split('\n').filter((u) => u.includes(`/node_modules/`));
    expect(loaded.length).toBeGreaterThan(0);
    expect(loaded.filter((u) => !u.includes(`/node_modules/${NAME}/dist/src/`) || /supervisor|queue|router|esbuild|piscina|xstate|zod/.test(u))).toEqual([]);
  }, 30_000);
});

describe('the public surface', () => {
  /** Every export of each entry's declarations, with whether it is a value or only a type. */
  function surface(): Record<string, string[]> {
    const entries = { '.': 'index', './brain': 'brain', './machine': 'machine', './low-level': 'low-level', './chaos': 'chaos' };
    const files = Object.values(entries).map((e) => path.join(REPO, 'dist', 'src', `${e}.d.ts`));
    const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: ['node'], skipLibCheck: true });
    const checker = program.getTypeChecker();
    const out: Record<string, string[]> = {};
    for (const [entry, name] of Object.entries(entries)) {
      const sf = program.getSourceFile(path.join(REPO, 'dist', 'src', `${name}.d.ts`))!;
      const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(sf)!);
      out[entry] = exports
        .map((s) => {
          const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
          return `${s.name}: ${target.flags & ts.SymbolFlags.Value ? 'value' : 'type'}`;
        })
        .sort();
    }
    return out;
  }

  it('names every type a public signature reaches (a consumer can write down what it is handed)', () => {
    const files = ['index', 'brain', 'machine', 'low-level', 'chaos'].map((e) => path.join(REPO, 'dist', 'src', `${e}.d.ts`));
    const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: ['node'], skipLibCheck: true });
    const checker = program.getTypeChecker();
    const exported = new Set<ts.Symbol>();
    for (const f of files) {
      for (const s of checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(f)!)!)) exported.add(s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
    }
    const named = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class | ts.SymbolFlags.Enum;
    const seen = new Set<ts.Type>();
    const unnamed = new Set<string>();
    const visit = (t: ts.Type, via: string, depth: number): void => {
      if (depth > 6 || seen.has(t)) return;
      seen.add(t);
      const sym = t.aliasSymbol ?? t.getSymbol();
      const file = sym?.declarations?.[0]?.getSourceFile().fileName ?? '';
      if (sym && !file.startsWith(path.join(REPO, 'dist') + path.sep)) return; // Node's and libraries' own types (xstate's too)
      if (sym && sym.flags & named && !exported.has(sym)) unnamed.add(`${sym.name} (${via})`);
      if (t.isUnionOrIntersection()) for (const u of t.types) visit(u, via, depth + 1);
      for (const p of t.getProperties()) {
        const decl = p.valueDeclaration ?? p.declarations?.[0];
        if (decl && (ts.getCombinedModifierFlags(decl as ts.Declaration) & ts.ModifierFlags.Private) === 0) visit(checker.getTypeOfSymbolAtLocation(p, decl), `${via}.${p.name}`, depth + 1);
      }
      for (const sig of [...t.getCallSignatures(), ...t.getConstructSignatures()]) {
        visit(sig.getReturnType(), `${via}()`, depth + 1);
        for (const a of sig.getParameters()) visit(checker.getTypeOfSymbolAtLocation(a, a.valueDeclaration!), `${via}(${a.name})`, depth + 1);
      }
    };
    for (const s of exported) {
      const decl = s.valueDeclaration ?? s.declarations?.[0];
      if (decl) visit(s.flags & ts.SymbolFlags.Value ? checker.getTypeOfSymbolAtLocation(s, decl) : checker.getDeclaredTypeOfSymbol(s), s.name, 0);
    }
    expect([...unnamed]).toEqual([]);
  });

  it('is exactly test/fixtures/public-api.json (an export added or removed by accident fails here; update the file on purpose)', () => {
    const file = path.join(REPO, 'test', 'fixtures', 'public-api.json');
    const now = surface();
    if (process.env.HIVE_UPDATE_API === '1') fs.writeFileSync(file, `${JSON.stringify(now, null, 2)}\n`);
    expect(now).toEqual(JSON.parse(fs.readFileSync(file, 'utf8')));
  });
});
