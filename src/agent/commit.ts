import { agentPaths } from '../layout/paths.ts';
import { fsyncDirAsync, syncFileAsync } from '../fs/atomic.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { writeOutbox } from '../queue/outbox.ts';
import type { PersistedAgentContext } from '../../machines/agent.ts';
import type { SessionTurn, StateStore } from './state-store.ts';
import { crashPoint } from '../testing/crash-point.ts';
import { plantActive } from '../testing/seams.ts';

/**
 * Commit of turn N, in order (what a crash between steps leaves):
 *   0. pay the sync debt of turn N-1: fdatasync its outbox files still waiting in outbox/
 *      (the router fdatasyncs a file before it links it into an inbox, so routed ones are
 *      durable already), all at once, then fsync outbox/
 *   1. append the commit to state.wal + fdatasync   crash before: turn N is replayed
 *      (the brain is asked again; none of its effects exist yet)
 *   2. outbox files, visible at once but not fsynced: turn N's debt. A power cut before
 *      step 0 of turn N+1 may tear them; restore re-writes `lastTurn.messages` missing or
 *      unreadable in outbox/ and not in outbox/.sent/ (same ids: the router drops copies).
 *      Only the last turn can be in debt, and its commit record holds its messages.
 *   3. cursor.json mirror                           lazily; the commit record wins
 * The handled inbox entries stay in the inbox log: the cursor in the record is what says
 * they were handled (the router compacts old segments).
 *
 * Why the debt: an fsync is the costliest step of a turn; syncing every outbox copy
 * inside the commit would double the cost of a turn for data the commit already holds.
 */

/** Turn N's outbox files whose data may not be on stable storage yet. */
export type SyncDebt = string[];

/**
 * Step 0: makes the previous turn's outbox files durable. Their flushes are issued together
 * (libuv's pool), so the journal commits them in one go instead of one after another.
 */
export async function paySyncDebt(root: string, agentId: string, debt: SyncDebt): Promise<void> {
  if (debt.length === 0) return;
  // A file the router took already fails its open with ENOENT here, before any trip to the
  // thread pool (syncFileAsync opens in this thread): no separate existence check.
  const synced = await Promise.all(
    debt.map((file) =>
      syncFileAsync(file).then(
        () => true,
        (err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return false; // routed: moved to .sent/ after the router synced it
          throw err;
        },
      ),
    ),
  );
  if (synced.some(Boolean)) await fsyncDirAsync(agentPaths(root, agentId).outbox);
}

/** The window of the `cursor-before-state` plant (src/testing/seams.ts). */
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Runs one step of a commit; an actor passes one that waits out a full disk (ShortageGate.run). */
export type StepRunner = <T>(step: () => T | Promise<T>) => Promise<T>;

const runDirectly: StepRunner = async (step) => step();

export interface CommitInput {
  root: string;
  next: PersistedAgentContext;
  messages: HiveMessage[];
  /** The previous turn's outbox files not flushed yet (step 0 pays them). */
  debt: SyncDebt;
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
 * Steps 0–3. Returns the new sync debt and the commit number. `onCommitted` runs right
 * after step 1: the turn is durable from there on (a restore finishes its effects from the
 * commit record). `runStep` runs each step on its own, so a step that must be tried again
 * (a full disk) repeats only itself: the commit is appended once, whatever fails after it.
 */
export async function commitTurn(store: StateStore, c: CommitInput): Promise<{ debt: SyncDebt; commit: number }> {
  const runStep = c.runStep ?? runDirectly;
  await runStep(() => paySyncDebt(c.root, c.next.agentId, c.debt));
  crashPoint('commit.after-debt');
  if (c.previous && plantActive('cursor-before-state')) {
    store.append({ ...c.previous, cursor: c.next.cursor }, []);
    Atomics.wait(pause, 0, 0, 150); // widen the window a crash must hit
  }
  const record = await runStep(() => store.append(c.next, c.messages, c.session));
  crashPoint('commit.after-wal');
  c.onCommitted?.();
  const written = c.messages.length > 0 ? await runStep(() => writeOutbox(c.root, c.messages, { durable: false })) : [];
  crashPoint('commit.after-outbox');
  return { debt: written, commit: record.commit };
}
