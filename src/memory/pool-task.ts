/**
 * The piscina task module (compiled by `compiledEntry`; never imported by the package).
 * Each call runs one memory job in a pool thread.
 */
import { runMemoryTask, type MemoryTask } from './task.ts';

export default function run(task: MemoryTask): Promise<unknown> {
  return runMemoryTask(task);
}
