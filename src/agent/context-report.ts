import type { ActorContextSummary, WorkerEvent } from '../protocol/worker.ts';
import type { AgentContext } from '../../machines/agent.ts';
import type { Clock } from './clock.ts';
import type { JsonValue, MachineView } from '../brains/types.ts';

const BRAIN_STATE_CAP = 2_000;

/**
 * Reports an agent's context to the supervisor for the inspector, coalesced: at most
 * one `actor.context` event per `everyMs` per actor, carrying the latest context, and
 * none while nothing changed. Keeps worker→main traffic small under load (an actor may
 * change state thousands of times a second).
 */
export class ContextReporter {
  private latest: AgentContext | null = null;
  private handle: unknown = null;
  private lastKey = '';

  constructor(
    private readonly agent: string,
    private readonly emit: (e: WorkerEvent) => void,
    private readonly clock: Clock,
    /** The brain's own view of its state (a machine agent's machine), if it has one. */
    private readonly describe?: (state: JsonValue) => MachineView | null,
    private readonly everyMs = 250,
  ) {}

  changed(context: AgentContext): void {
    this.latest = context;
    if (this.handle !== null) return;
    this.handle = this.clock.setTimeout(() => {
      this.handle = null;
      this.flush();
    }, this.everyMs);
  }

  cancel(): void {
    if (this.handle !== null) this.clock.clearTimeout(this.handle);
    this.handle = null;
  }

  private flush(): void {
    const c = this.latest;
    if (!c) return;
    const key = `${c.cursor}:${c.handled}:${c.turns}:${c.timers.length}`;
    if (key === this.lastKey) return;
    this.lastKey = key;
    let brainState: string;
    try {
      brainState = JSON.stringify(c.brainState) ?? 'null';
    } catch {
      brainState = '"(not serializable)"';
    }
    if (brainState.length > BRAIN_STATE_CAP) brainState = `${brainState.slice(0, BRAIN_STATE_CAP - 1)}…`;
    const context: ActorContextSummary = {
      cursor: c.cursor,
      handled: c.handled,
      turns: c.turns,
      timers: c.timers.slice(0, 20).map((t) => ({ name: t.name, at: t.at })),
      brainState,
    };
    const machine = this.describe?.(c.brainState);
    if (machine) context.machine = capped(machine);
    this.emit({ type: 'actor.context', agent: this.agent, context });
  }
}

const MACHINE_CONTEXT_CAP = 4_000;

/** A machine view small enough to send often: a big context goes as its first characters. */
function capped(view: MachineView): MachineView {
  const text = JSON.stringify(view.context) ?? 'null';
  return text.length <= MACHINE_CONTEXT_CAP ? view : { ...view, context: `${text.slice(0, MACHINE_CONTEXT_CAP - 1)}…` };
}
