#!/usr/bin/env node
// The `hive` command. Loads the TypeScript sources through tsx, so it runs from a
// checkout with no build step: `npx hive ...`.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
const code = await runCli(process.argv.slice(2));
process.exitCode = code;
