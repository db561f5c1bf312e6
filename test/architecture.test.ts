// The layers of docs/architecture.md ("Layers"): machines/ ← src/ ← actors/, no import
// cycles (type-only ones included), and no file over ~300 lines without a reason at its
// top. The import rules are .dependency-cruiser.cjs; the second test plants a violation of
// each in a scratch tree and checks that it is caught, so the rules cannot silently match nothing.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cruise, type ICruiseResult, type IReporterOutput } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { tempRoot } from './helpers/temp.ts';
import { MACHINES, machineGraph } from '../src/inspector/machine-graph.ts';
import { renderMachineSvg } from '../src/inspector/diagram.ts';

const REPO = path.resolve(import.meta.dirname, '..');

async function violations(baseDir: string): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(baseDir); // the rules' paths are relative to the tree cruised
  try {
    const options = await extractDepcruiseOptions(path.join(REPO, '.dependency-cruiser.cjs'));
    const tsConfig = extractTSConfig(path.join(baseDir, 'tsconfig.json'));
    const dirs = ['src', 'actors', 'machines'].filter((d) => fs.existsSync(d));
    const out: IReporterOutput = await cruise(dirs, { ...options, validate: true }, { extensions: ['.ts', '.mts', '.js', '.mjs'] }, { tsConfig });
    const result = out.output as ICruiseResult;
    return (result.summary.violations ?? []).map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' → ')})` : ''}`);
  } finally {
    process.chdir(cwd);
  }
}

describe('architecture', () => {
  it('imports go one way (machines ← src ← actors) and form no cycle', async () => {
    expect(await violations(REPO)).toEqual([]);
  }, 60_000);

  it('each rule catches what it forbids (planted in a scratch tree)', async () => {
    const dir = tempRoot();
    fs.mkdirSync(dir, { recursive: true });
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    };
    fs.copyFileSync(path.join(REPO, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
    write('actors/host.ts', "import { x } from '../src/up.ts';\nexport const h = x;\n");
    write('src/up.ts', "import { h } from '../actors/host.ts';\nexport const x = 1;\nexport const y = h;\n"); // upward, and a cycle
    write('src/protocol/msg.ts', 'export interface Msg { id: string }\nexport const parse = (s: string) => s;\n');
    write('src/fs/io.ts', 'export const read = () => 1;\n');
    write('machines/m.ts', "import type { Msg } from '../src/protocol/msg.ts';\nimport { parse } from '../src/protocol/msg.ts';\nimport { read } from '../src/fs/io.ts';\nexport const m = (x: Msg) => [parse(x.id), read()];\n");
    write('src/a.ts', "import type { B } from './b.ts';\nexport interface A { b?: B }\n");
    write('src/b.ts', "import type { A } from './a.ts';\nexport interface B { a?: A }\n"); // a type-only cycle
    write('src/bad.ts', "import { t } from '../test/helper.ts';\nexport const bad = t;\n");
    write('test/helper.ts', 'export const t = 1;\n');
    const found = await violations(dir);
    const rules = (name: string) => found.filter((v) => v.startsWith(`${name}:`));
    expect(rules('src-not-to-actors')).toEqual(['src-not-to-actors: src/up.ts → actors/host.ts']);
    expect(rules('machines-are-pure')).toEqual(['machines-are-pure: machines/m.ts → src/fs/io.ts']);
    expect(rules('machines-protocol-types-only')).toEqual(['machines-protocol-types-only: machines/m.ts → src/protocol/msg.ts']);
    expect(rules('nothing-imports-tests-or-scripts')).toEqual(['nothing-imports-tests-or-scripts: src/bad.ts → test/helper.ts']);
    // Each cycle is reported once, from one of its modules.
    expect(rules('no-cycles').map((v) => v.split(' (')[0]).sort()).toEqual(['no-cycles: actors/host.ts → src/up.ts', 'no-cycles: src/a.ts → src/b.ts']);
  }, 60_000);

  it('no source file is over ~300 lines without a reason written at its top', () => {
    const long: string[] = [];
    for (const top of ['src', 'actors', 'machines']) {
      for (const file of fs.readdirSync(path.join(REPO, top), { recursive: true, encoding: 'utf8' })) {
        if (!/\.(ts|mts)$/.test(file)) continue;
        const text = fs.readFileSync(path.join(REPO, top, file), 'utf8');
        const lines = text.split('\n').length;
        // The reason is a comment among the first lines: "Long on purpose: …".
        if (lines > 330 && !text.split('\n').slice(0, 12).some((l) => l.includes('Long on purpose:'))) long.push(`${top}/${file} (${lines} lines)`);
      }
    }
    expect(long).toEqual([]);
  });

  it("every NATS connection is opened by src/queue/nats.ts's connect (its options, noAsyncTraces among them, hold for all)", () => {
    const direct: string[] = [];
    for (const top of ['src', 'actors']) {
      for (const file of fs.readdirSync(path.join(REPO, top), { recursive: true, encoding: 'utf8' })) {
        if (!/\.(ts|mts)$/.test(file) || `${top}/${file}` === 'src/queue/nats.ts') continue;
        const text = fs.readFileSync(path.join(REPO, top, file), 'utf8');
        // A value import of the client's connect, or the client loaded at run time.
        if (/import\s*\{[^}]*(?<!type\s)\bconnect\b[^}]*\}\s*from\s*'@nats-io\/transport-node'|import\(\s*'@nats-io\/transport-node'\s*\)/.test(text)) direct.push(`${top}/${file}`);
      }
    }
    expect(direct).toEqual([]);
  });

  it("docs/architecture.md's diagrams are what hive diagram draws from the machines now", async () => {
    for (const name of Object.keys(MACHINES) as (keyof typeof MACHINES)[]) {
      const drawn = await renderMachineSvg(machineGraph(MACHINES[name]), { title: `${name} machine` });
      const kept = fs.readFileSync(path.join(REPO, 'docs', 'diagrams', `${name}.svg`), 'utf8');
      expect(kept, `docs/diagrams/${name}.svg is stale: node bin/hive.mjs diagram ${name} --out docs/diagrams/${name}.svg`).toBe(drawn);
      expect(fs.readFileSync(path.join(REPO, 'docs', 'architecture.md'), 'utf8')).toContain(`(diagrams/${name}.svg)`);
    }
  });
});
