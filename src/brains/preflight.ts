import fs from 'node:fs';
import path from 'node:path';
import type { BrainSpec } from '../config/schema.ts';
import { PRESET, commandOf } from './presets.ts';

/**
 * What can be known of a brain before its agent starts, checked in the main thread when the
 * agent is started or spawned: a module brain's file exists and is a regular file; a command
 * brain's program exists and may be run (a path) or is found on PATH (a bare name). Returns
 * what is wrong, in words that name the agent's setting, or null. A provider that is there
 * and fails later (an endpoint down, a file removed) is a runtime matter: its turns wait.
 */
export function brainProblem(brain: BrainSpec): string | null {
  if (brain.kind === 'module') return fileProblem(brain.module, 'brain module');
  if (brain.kind === 'machine') return fileProblem(brain.module, 'machine module') ?? (brain.provider ? brainProblem(brain.provider) : null);
  if (brain.kind === 'command') {
    const found = findProgram(commandOf(brain), brain.env?.PATH ?? process.env.PATH ?? '');
    if (typeof found === 'string') return null;
    // A preset's CLI missing: say which CLI, which preset, and how to point at it.
    return brain.preset ? `${PRESET[brain.preset].title} (preset ${brain.preset}): ${found.problem}; install it or set brain.command to its path` : found.problem;
  }
  return null;
}

function fileProblem(file: string, what: string): string | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return `${what} ${file} does not exist`;
  }
  return st.isFile() ? null : `${what} ${file} is not a regular file`;
}

/** The program a command names: a path checked as it is, a bare name looked up on PATH. */
export function findProgram(command: string, searchPath: string): string | { problem: string } {
  if (command.includes('/')) {
    const problem = fileProblem(command, 'brain command');
    if (problem) return { problem };
    try {
      fs.accessSync(command, fs.constants.X_OK);
    } catch {
      return { problem: `brain command ${command} is not executable (chmod +x it)` };
    }
    return command;
  }
  for (const dir of searchPath.split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, command);
    try {
      if (fs.statSync(candidate).isFile()) {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      }
    } catch {
      // not here
    }
  }
  return { problem: `brain command ${JSON.stringify(command)} is not on PATH (give a path, e.g. ./bin/${command}, relative to the config's folder)` };
}
