import { readStateFile } from './state-store.ts';
import { valueText } from '../protocol/machine-view.ts';

/** A machine agent's machine state as its last commit record holds it (`armed`), or null (none committed, or not a machine agent). */
export function offlineMachineState(root: string, agentId: string): string | null {
  try {
    const brain = readStateFile(root, agentId)?.snapshot.context.brainState as { machine?: unknown; snapshot?: { value?: unknown } } | null | undefined;
    return brain && brain.machine === 1 && brain.snapshot ? valueText(brain.snapshot.value as never) : null;
  } catch {
    return null;
  }
}
