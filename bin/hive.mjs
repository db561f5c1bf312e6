#!/usr/bin/env node
// The `hive` command. Installed from the package it runs the prebuilt CLI in dist/; in a
// checkout (scripts/ is there, and never shipped) it runs the sources through
// scripts/hive.mjs, so a stale dist/ is never what a developer runs.
import fs from 'node:fs';

const [first] = process.argv.slice(2);
const dev = new URL('../scripts/hive.mjs', import.meta.url);
if (first === '--version' || first === '-V') {
  // Answered here, before any of the CLI loads: a version check should cost a Node start.
  process.stdout.write(`${JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`);
} else if (fs.existsSync(dev)) {
  await import(dev.href);
} else {
  const { runCli, endProcess } = await import(new URL('../dist/cli/main.mjs', import.meta.url).href);
  endProcess(await runCli(process.argv.slice(2)));
}
