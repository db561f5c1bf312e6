import { mineWing, type MineWingTask } from './mine-wing.ts';
import { buildSnapshot } from './snapshot.ts';
import { condenseTask, type CondenseTask } from './condense.ts';
import { adoptModesOf } from '../fs/modes.ts';

/** One memory batch job, as it crosses to a pool thread (plain data). */
export type MemoryTask =
  | { kind: 'mine-wing'; task: MineWingTask }
  | { kind: 'snapshot'; root: string }
  | { kind: 'condense'; task: CondenseTask };

/** Runs a job in this thread. */
export async function runMemoryTask(task: MemoryTask): Promise<unknown> {
  // A pool thread writes palace files: with the hive's modes (src/fs/modes.ts).
  if (task.kind === 'snapshot') adoptModesOf(task.root);
  else if (task.kind === 'mine-wing') adoptModesOf(task.task.root);
  switch (task.kind) {
    case 'mine-wing':
      return mineWing(task.task);
    case 'snapshot':
      return buildSnapshot(task.root);
    case 'condense':
      return condenseTask(task.task);
  }
}
