import { HiveError } from '../errors.ts';
import type { Draft, JsonValue, MachineStep } from './types.ts';
import { valueText } from '../protocol/machine-view.ts';
import { RECENT_KEPT, TIMER_PREFIX, isPromiseLogic, unpersistable, type MachineBrainState } from './machine-state.ts';

export { TIMER_PREFIX, describeMachineState, isMachineState, type MachineBrainState, type PersistedDelay } from './machine-state.ts';

/**
 * A user's XState machine, live between turns, and what a turn on it commits
 * (docs/architecture.md, "Machine agents"). The machine runs on the user's own copy of
 * xstate (loaded from its module's folder), never on Hive's: nothing of it meets Hive's
 * plumbing but plain JSON (events in, snapshot and messages out).
 *
 * Durable delays: XState keeps a delayed event (`after`, `raise`/`sendTo` with `delay`) as
 * a timeout of its system's scheduler and drops it on restore (xstate #5331). Here the
 * scheduler of the actor's system is replaced by one that only records each delayed event
 * with its deadline; the record goes into the commit record and each deadline becomes a
 * durable Hive timer named `xstate:<actor path>#<id>`. When the timer fires (a turn of its
 * own), the event is delivered; after a restore the record is read back first.
 */

/** The parts of the xstate module the runtime calls. */
export interface XStateRuntime {
  createActor: (logic: unknown, options?: Record<string, unknown>) => MachineActor;
  fromPromise: (fn: (args: { input: never; signal: AbortSignal }) => Promise<unknown>) => unknown;
}

interface ActorRefLike {
  id: string;
  sessionId: string;
  send(event: unknown): void;
  getSnapshot(): { status: string; value?: JsonValue; context?: JsonValue; children?: Record<string, ActorRefLike | undefined>; can?: (e: unknown) => boolean; error?: unknown };
  on?(type: string, fn: (e: Record<string, unknown>) => void): unknown;
  subscribe(o: { next?: () => void; error?: (e: unknown) => void; complete?: () => void }): { unsubscribe(): void };
  logic?: unknown;
}

interface MachineActor extends ActorRefLike {
  system: { scheduler: Scheduler };
  start(): void;
  stop(): void;
  getPersistedSnapshot(): unknown;
}

interface Scheduler {
  schedule(source: ActorRefLike, target: ActorRefLike, event: unknown, delay: number, id?: string): void;
  cancel(source: ActorRefLike, id: string): void;
  cancelAll(actorRef: ActorRefLike): void;
}

export interface TurnOutcome {
  drafts: Draft[];
  state: MachineBrainState;
  schedule: { name: string; delayMs: number }[];
  cancel: string[];
}

/** One machine, live: restored from a brain state (or started fresh), then driven turn by turn. */
export class LiveMachine {
  readonly actor: MachineActor;
  rev: number;
  private readonly delays = new Map<string, { source: ActorRefLike; target: ActorRefLike; event: unknown; id: string; at: number }>();
  private readonly promises = new Set<ActorRefLike>();
  private readonly listened = new WeakSet<object>();
  private drafts: Draft[] = [];
  private recent: MachineStep[];
  private failure: unknown = null;
  /** The delays the agent's durable timers stand for (timer name → deadline): the last commit's, and those armed at start. */
  committed: Map<string, number>;
  /** The turn's time (the agent's clock) and the wall clock then: a delay armed after an invocation counts from when it was armed. */
  private base: { now: number; wall: number };

  constructor(
    xs: XStateRuntime,
    machine: unknown,
    private readonly label: string,
    persisted: MachineBrainState | null,
    now: number,
    input: unknown,
  ) {
    this.base = { now, wall: Date.now() };
    this.rev = persisted?.rev ?? 0;
    this.committed = new Map((persisted?.delays ?? []).map((d) => [`${TIMER_PREFIX}${d.source}#${d.id}`, d.at]));
    this.recent = persisted?.recent ? [...persisted.recent] : [];
    this.actor = xs.createActor(machine, {
      ...(persisted ? { snapshot: persisted.snapshot } : {}),
      ...(input !== undefined ? { input } : {}),
      inspect: (e: { type: string; actorRef?: ActorRefLike }) => {
        if (e.type === '@xstate.actor' && e.actorRef) this.adopt(e.actorRef);
      },
    });
    this.adopt(this.actor);
    this.replaceScheduler(this.actor.system.scheduler);
    this.actor.subscribe({ error: (err) => (this.failure = err) });
    const restored = this.actor.getSnapshot();
    if (restored.status === 'error') {
      throw new HiveError('E_BAD_SNAPSHOT', `${label}: the committed snapshot no longer fits the machine: ${messageOf(restored.error)}`, { cause: restored.error });
    }
    this.actor.start();
    if (this.failure) throw new HiveError(persisted ? 'E_BAD_SNAPSHOT' : 'E_MACHINE', `${label}: the machine failed to start: ${messageOf(this.failure)}`, { cause: this.failure });
    for (const d of persisted?.delays ?? []) {
      const source = this.resolve(d.source);
      const target = this.resolve(d.target);
      if (source && target) this.delays.set(`${source.sessionId}#${d.id}`, { source, target, event: d.event, id: d.id, at: d.at });
    }
  }

  /** The state value as text (`review.pending`). */
  value(): string {
    return valueText(this.actor.getSnapshot().value);
  }

  /** Sends one event; an event the machine has no transition for is recorded as ignored and not sent. */
  deliver(event: { type: string }, now: number): { ignored: boolean; state: string } {
    this.base = { now, wall: Date.now() };
    const from = this.value();
    const snap = this.actor.getSnapshot();
    if (snap.status !== 'active' || (snap.can && !snap.can(event))) {
      this.step({ at: now, event: event.type, from, to: from, ignored: true });
      return { ignored: true, state: from };
    }
    this.actor.send(event);
    this.check(`event ${event.type} in state ${from}`);
    this.step({ at: now, event: event.type, from, to: this.value() });
    return { ignored: false, state: from };
  }

  /**
   * Fires the delayed event a durable timer stands for: `fired`; `ignored` when its target has
   * no transition for it now (a machine changed since the delay was armed: its `after` renamed
   * or gone); `gone` when the delay is no longer pending.
   */
  fire(timerName: string, now: number): 'fired' | 'ignored' | 'gone' {
    this.base = { now, wall: Date.now() };
    for (const [key, d] of this.delays) {
      if (this.timerName(d) !== timerName) continue;
      this.delays.delete(key);
      const from = this.value();
      const type = String((d.event as { type?: string }).type);
      const target = d.target.getSnapshot();
      if (target.status !== 'active' || (target.can && !target.can(d.event))) {
        this.step({ at: now, event: type, from, to: from, ignored: true });
        return 'ignored';
      }
      d.target.send(d.event);
      this.check(`delayed event ${type} in state ${from}`);
      this.step({ at: now, event: type, from, to: this.value() });
      return 'fired';
    }
    return 'gone';
  }

  /** Waits until no invoked or spawned promise runs, up to `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = [...this.promises].filter((p) => p.getSnapshot().status === 'active');
      for (const p of this.promises) if (p.getSnapshot().status !== 'active') this.promises.delete(p);
      if (running.length === 0) break;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new HiveError('E_TIMEOUT', `${this.label}: ${running.map((p) => p.id).join(', ')} still running after ${timeoutMs} ms in state ${this.value()} (timeoutMs)`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        const subs = running.map((p) => p.subscribe({ complete: done, error: done, next: () => p.getSnapshot().status !== 'active' && done() }));
        function done() {
          clearTimeout(timer);
          for (const s of subs) s.unsubscribe();
          resolve();
        }
      });
      // The parent takes the done event in the same relay; let it finish before looking again.
      await new Promise((r) => setImmediate(r));
      this.check(`an invocation in state ${this.value()}`);
    }
  }

  /** What the turn commits: the messages emitted, the persisted snapshot, the delays to arm and cancel. */
  outcome(before: Map<string, number>, fired: string | null): TurnOutcome {
    let persisted: JsonValue;
    let bad: string[];
    try {
      persisted = JSON.parse(JSON.stringify(this.actor.getPersistedSnapshot() ?? null)) as JsonValue;
      bad = unpersistable(persisted, 'root');
    } catch (err) {
      // Recent xstate refuses itself ("An inline child actor cannot be persisted"): name which.
      bad = this.inlineChildren(this.actor, 'root');
      if (bad.length === 0) throw new HiveError('E_MACHINE', `${this.label}: the machine's snapshot cannot be persisted in state ${this.value()}: ${messageOf(err)}`, { cause: err });
      persisted = null;
    }
    if (bad.length > 0) {
      throw new HiveError('E_BAD_CONFIG', `${this.label}: ${bad.join(', ')} run${bad.length === 1 ? 's' : ''} inline logic, which no snapshot restores (xstate #5057): name it in setup({ actors })`);
    }
    const delays = [...this.delays.values()].flatMap((d) => {
      const source = this.pathOf(d.source);
      const target = this.pathOf(d.target);
      return source && target ? [{ source, target, id: d.id, event: JSON.parse(JSON.stringify(d.event)) as JsonValue, at: d.at }] : [];
    });
    // A delay armed anew under the same name (its state left and entered again) moves its timer.
    const moved = (d: { at: number }, name: string) => before.has(name) && before.get(name) !== d.at;
    const names = new Map(delays.map((d) => [this.timerName(d), d.at]));
    this.rev += 1;
    this.committed = new Map(names);
    const drafts = this.drafts;
    this.drafts = [];
    return {
      drafts,
      state: { machine: 1, rev: this.rev, snapshot: persisted, delays, recent: this.recent },
      schedule: delays.filter((d) => !before.has(this.timerName(d)) || moved(d, this.timerName(d))).map((d) => ({ name: this.timerName(d), delayMs: Math.max(0, d.at - this.base.now) })),
      cancel: [...before.keys()].filter((n) => n !== fired && (!names.has(n) || names.get(n) !== before.get(n))),
    };
  }

  /** The delays pending now: timer name → deadline. */
  pendingTimers(): Map<string, number> {
    return new Map([...this.delays.values()].flatMap((d) => {
      const source = this.pathOf(d.source);
      return source ? [[`${TIMER_PREFIX}${source}#${d.id}`, d.at] as const] : [];
    }));
  }

  stop(): void {
    this.actor.stop();
  }

  private timerName(d: { source: ActorRefLike | string; id: string }): string {
    return `${TIMER_PREFIX}${typeof d.source === 'string' ? d.source : this.pathOf(d.source)}#${d.id}`;
  }

  private check(what: string): void {
    const snap = this.actor.getSnapshot();
    if (this.failure || snap.status === 'error') {
      const err = this.failure ?? snap.error;
      // The provider's own failures keep their code: an unreachable provider pauses the turn,
      // a failed or slow call is retried in place, as for any brain (not poison at once).
      const code = (err as { code?: unknown } | null)?.code;
      if (code === 'E_UNAVAILABLE' || code === 'E_BRAIN' || code === 'E_TIMEOUT') throw err;
      throw new HiveError('E_MACHINE', `${this.label}: the machine threw on ${what}: ${messageOf(err)}`, { cause: err });
    }
  }

  private step(s: MachineStep): void {
    this.recent.push(s);
    if (this.recent.length > RECENT_KEPT) this.recent.splice(0, this.recent.length - RECENT_KEPT);
  }

  /** Listens to an actor's emitted `hive.send` events; tracks its promise if it is one. */
  private adopt(ref: ActorRefLike): void {
    if (this.listened.has(ref)) return;
    this.listened.add(ref);
    if (isPromiseLogic(ref.logic)) this.promises.add(ref);
    ref.on?.('hive.send', (e) => {
      const { type: _type, ...draft } = e;
      this.drafts.push(draft as unknown as Draft);
    });
  }

  private replaceScheduler(s: Scheduler): void {
    s.schedule = (source, target, event, delay, id = `d${Math.random().toString(36).slice(2)}`) => {
      this.delays.set(`${source.sessionId}#${id}`, { source, target, event, id, at: this.base.now + (Date.now() - this.base.wall) + Math.max(0, delay) });
    };
    s.cancel = (source, id) => {
      this.delays.delete(`${source.sessionId}#${id}`);
    };
    s.cancelAll = (ref) => {
      for (const [key, d] of this.delays) if (d.source === ref) this.delays.delete(key);
    };
  }

  /** `root`, `root/child`, `root/child/grandchild`: an actor's path through its parents' children. */
  private pathOf(ref: ActorRefLike): string | null {
    const walk = (at: ActorRefLike, path: string): string | null => {
      if (at === ref) return path;
      for (const [id, child] of Object.entries(at.getSnapshot().children ?? {})) {
        if (!child) continue;
        const found = walk(child, `${path}/${id}`);
        if (found) return found;
      }
      return null;
    };
    return walk(this.actor, 'root');
  }

  /** Live children whose logic was given inline (their `src` is the logic, not a name). */
  private inlineChildren(at: ActorRefLike, path: string): string[] {
    return Object.entries(at.getSnapshot().children ?? {}).flatMap(([id, child]) =>
      !child ? [] : typeof (child as { src?: unknown }).src !== 'string' ? [`${path}/${id}`] : this.inlineChildren(child, `${path}/${id}`),
    );
  }

  private resolve(path: string): ActorRefLike | null {
    let at: ActorRefLike | undefined = this.actor;
    for (const id of path.split('/').slice(1)) at = at?.getSnapshot().children?.[id];
    return at ?? null;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
