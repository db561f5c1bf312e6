import type { HiveMessage } from '../protocol/message.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import type { SessionTurn } from './state-store.ts';
import type { AgentLink } from '../queue/transport.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { plantActive } from '../testing/seams.ts';

/**
 * Commit of turn N, in order (what a crash between steps leaves):
 *   1. append the commit to state.wal + fdatasync   crash before: turn N is replayed
 *      (the brain is asked again; none of its effects exist yet). The record holds the new
 *      state, the cursor and every message the turn emits: it is the turn's outbox. The
 *      router reads the messages from it (src/queue/commit-outbox.ts); no outbox file is
 *      written for them.
 *   2. mark the commit durable (`agents/<id>/committed`)   crash before (commit.before-mark):
 *      the next start flushes the log and marks it (StateStore.markRestored)
 *   3. cursor.json mirror                           lazily; the commit record wins
 * The handled inbox entries stay in the inbox log: the cursor in the record is what says
 * they were handled (the router compacts old segments).
 */

/** The window of the `cursor-before-state` plant (src/testing/seams.ts). */
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Runs one step of a commit; an actor passes one that waits out a full disk (ShortageGate.run). */
export type StepRunner = <T>(step: () => T | Promise<T>) => Promise<T>;

const runDirectly: StepRunner = async (step) => step();

export interface CommitInput {
  next: PersistedAgentContext;
  messages: HiveMessage[];
  /** What the turn adds to the conversation (kept in the commit record: see SessionTurn). */
  session?: SessionTurn[];
  /** The context before the turn (the planted bug of the chaos tests needs it). */
  previous?: PersistedAgentContext;
  /** Runs right after step 1: the turn is durable from there on. */
  onCommitted?: () => void;
  /** Runs each step (default: directly). */
  runStep?: StepRunner;
}

/**
 * Step 1 (and 2, inside the link's commit: for the filesystem, StateStore.append). Returns the commit number. `onCommitted` runs
 * right after it: the turn is durable from there on. `runStep` runs the step so that one
 * that must be tried again (a full disk) repeats only itself.
 */
export async function commitTurn(link: AgentLink, c: CommitInput): Promise<{ commit: number }> {
  const runStep = c.runStep ?? runDirectly;
  crashPoint('commit.before-wal');
  if (c.previous && plantActive('cursor-before-state')) {
    await link.commit({ ...c.previous, cursor: c.next.cursor }, []);
    Atomics.wait(pause, 0, 0, 150); // widen the window a crash must hit
  }
  const commit = await runStep(() => link.commit(c.next, c.messages, c.session));
  crashPoint('commit.after-wal');
  c.onCommitted?.();
  return { commit };
}
