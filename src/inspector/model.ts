import type { ActorContextSummary, Delivery } from '../protocol/worker.ts';
import type { MachineView } from '../protocol/machine-view.ts';
import type { Hive } from '../hive.ts';
import { HiveError } from '../errors.ts';
import { GOD_ID } from '../protocol/agent-id.ts';
import { listDeadLetters } from '../queue/dead-letter.ts';
import type { HiveMessage } from '../protocol/message.ts';
import type { ActorStatus } from '../supervisor/supervisor.ts';
import { isQuestion, type Question } from '../human/questions.ts';
import type { MachineName } from './machine-graph.ts';
import { AgentPlacementView } from '../supervisor/where.ts';

/** What the page shows; sent whole on connect, then as partial updates. */
export interface InspectorSnapshot {
  root: string;
  pid: number;
  /** `machine`: the runtime machine it runs (the turn loop for agents); `own`: a machine agent's own machine, live. */
  actors: (ActorStatus & { machine: MachineName | null; context: unknown; own: MachineView | null; runsOn?: string | null })[];
  /** Cluster mode: this machine's name (each actor's `runsOn` says where it runs). */
  clusterHost?: string;
  hosts: ReturnType<Hive['supervisor']['hostStatus']>;
  messages: (Delivery & { at: string; question: boolean })[];
  deadLetters: { name: string; error: string; code: string | null; source: string | null; at: string | null }[];
  questions: Question[];
}

export type InspectorUpdate =
  | { type: 'snapshot'; data: InspectorSnapshot }
  | { type: 'state'; data: { actor: string; value: string } }
  | { type: 'message'; data: Delivery & { at: string; question: boolean } }
  | { type: 'actors'; data: Pick<InspectorSnapshot, 'actors' | 'hosts' | 'clusterHost'> }
  | { type: 'dead-letters'; data: InspectorSnapshot['deadLetters'] }
  | { type: 'questions'; data: Question[] };

/** Which machine an actor of this kind runs (passive agents run none). */
function machineOf(kind: ActorStatus['kind']): MachineName | null {
  return kind === 'passive' ? null : kind;
}

const MESSAGES_KEPT = 200;
const DEAD_LETTERS_SHOWN = 50;
/** A state highlight is sent at most this often per actor (the latest value always arrives). */
const STATE_EVERY_MS = 100;
/** How often, in cluster mode, the inspector looks up which machine each agent runs on. */
const PLACEMENT_EVERY_MS = 2_000;

/**
 * The inspector's view of a running hive, fed by the hive's events. Keeps the recent
 * messages, coalesces state changes per actor (an actor under load changes state
 * thousands of times a second; the page needs a few), and refreshes the slower facts
 * (inbox depth, contexts, worker lifecycles) on a tick while a page is connected.
 */
export class InspectorModel {
  private readonly messages: (Delivery & { at: string; question: boolean })[] = [];
  private readonly listeners = new Set<(u: InspectorUpdate) => void>();
  private readonly offs: (() => void)[] = [];
  private readonly lastState = new Map<string, { at: number; timer: NodeJS.Timeout | null; value: string }>();
  private tick: NodeJS.Timeout | null = null;
  private lastActors = '';
  private lastQuestions = '';
  /** Cluster mode: where each agent runs, looked up every PLACEMENT_EVERY_MS while a page is connected. */
  private placement: { view: Promise<AgentPlacementView | null>; at: number } | null = null;

  constructor(
    private readonly hive: Hive,
    private readonly tickMs = 500,
  ) {
    this.offs.push(
      hive.on('delivered', (d) => {
        // `question`: the rule of human/questions.ts, so the page highlights what `hive ask` lists.
        const m = { ...d, at: new Date().toISOString(), question: d.agent === GOD_ID && isQuestion(d) };
        this.messages.push(m);
        if (this.messages.length > MESSAGES_KEPT) this.messages.shift();
        this.publish({ type: 'message', data: m });
        if (d.agent === GOD_ID || d.from === GOD_ID) this.refreshQuestions();
      }),
      hive.on('state', (e) => this.onState(e.actor, e.value)),
      hive.on('dead-lettered', () => this.publish({ type: 'dead-letters', data: this.deadLetters() })),
      hive.on('restarted', () => this.refreshActors()),
      hive.on('crashed', () => this.refreshActors()),
      hive.on('failed', () => this.refreshActors()),
      hive.on('spawned', () => this.refreshActors()),
      hive.on('stopped', () => this.refreshActors()),
    );
  }

  snapshot(): InspectorSnapshot {
    this.refreshPlacement();
    return {
      root: this.hive.root,
      pid: process.pid,
      ...this.actorsAndHosts(),
      messages: [...this.messages],
      deadLetters: this.deadLetters(),
      questions: this.questions(),
    };
  }

  /** Listens to updates; the tick runs while at least one listener is connected. */
  subscribe(listener: (u: InspectorUpdate) => void): () => void {
    this.listeners.add(listener);
    if (!this.tick) {
      this.tick = setInterval(() => {
        this.refreshPlacement();
        this.refreshActors();
        this.refreshQuestions();
      }, this.tickMs);
      this.tick.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.tick) {
        clearInterval(this.tick);
        this.tick = null;
      }
    };
  }

  /**
   * Answers an ASK ME card through the hive's questions API: an `inform` from god to the
   * asker, in reply to the question and in its conversation, written durably into god's
   * outbox; the router is kicked at once. Answering twice is refused (E_CONFLICT).
   */
  answer(id: string, body: string): HiveMessage {
    if (typeof body !== 'string' || body.trim() === '') throw new HiveError('E_BAD_ARGS', 'Expected `body` to be a non-empty string');
    if (body.length > 100_000) throw new HiveError('E_BAD_ARGS', `Expected \`body\` to be at most 100000 characters, got ${body.length}`);
    const sent = this.hive.answer(id, body);
    this.refreshQuestions();
    return sent;
  }

  /** Retries or discards one dead letter (the hive's API), then republishes the list. */
  resolveDeadLetter(name: string, action: 'retry' | 'discard'): { id: string | null } {
    if (typeof name !== 'string' || name === '') throw new HiveError('E_BAD_ARGS', 'Expected `name` to be a dead letter name (a string)');
    const id = action === 'retry' ? this.hive.retryDeadLetters([name])[0]!.id : (this.hive.discardDeadLetters([name]), null);
    this.publish({ type: 'dead-letters', data: this.deadLetters() });
    return { id };
  }

  close(): void {
    void this.placement?.view.then((v) => v?.close());
    this.placement = null;
    for (const off of this.offs.splice(0)) off();
    if (this.tick) clearInterval(this.tick);
    for (const s of this.lastState.values()) if (s.timer) clearTimeout(s.timer);
    this.listeners.clear();
  }

  private publish(u: InspectorUpdate): void {
    for (const l of this.listeners) {
      try {
        l(u);
      } catch {
        // a broken connection is cleaned up by its own close handler
      }
    }
  }

  private onState(actor: string, value: string): void {
    let s = this.lastState.get(actor);
    if (!s) {
      s = { at: 0, timer: null, value };
      this.lastState.set(actor, s);
    }
    s.value = value;
    if (s.timer) return; // a trailing update is already due: it will carry this value
    const wait = s.at + STATE_EVERY_MS - Date.now();
    const send = () => {
      s!.timer = null;
      s!.at = Date.now();
      this.publish({ type: 'state', data: { actor, value: s!.value } });
    };
    if (wait <= 0) send();
    else s.timer = setTimeout(send, wait);
  }

  private actorsAndHosts(): Pick<InspectorSnapshot, 'actors' | 'hosts' | 'clusterHost'> {
    const contexts = this.hive.supervisor.contexts();
    const where = this.placedNow;
    const actors = this.hive.status().map((a) => {
      const { machine: own, ...context } = contexts[a.id] ?? ({} as Partial<ActorContextSummary>);
      return { ...a, machine: machineOf(a.kind), context: contexts[a.id] ? context : null, own: own ?? null, ...(where ? { runsOn: where.where[a.id] ?? null } : {}) };
    });
    return { actors, hosts: this.hive.supervisor.hostStatus(), ...(where ? { clusterHost: where.host } : {}) };
  }

  private placedNow: { host: string; where: Readonly<Record<string, string | null>> } | null = null;

  /** Cluster mode: refreshes where each agent runs (pinned, or the lease holder), at most every PLACEMENT_EVERY_MS. */
  private refreshPlacement(): void {
    if (this.placement && Date.now() - this.placement.at < PLACEMENT_EVERY_MS) return;
    // A failed open (NATS down, cluster.json not written yet) is tried again at the next refresh.
    this.placement ??= { view: AgentPlacementView.open(this.hive.root).catch(() => ((this.placement = null), null)), at: 0 };
    this.placement.at = Date.now();
    void this.placement.view.then(async (view) => {
      if (!view) {
        this.placement = null; // not (yet) a cluster machine: looked at again next time
        return;
      }
      const where = await view.refresh(this.hive.status().map((a) => a.id)).catch(() => null);
      if (where) this.placedNow = { host: view.cluster.host, where };
    });
  }

  /** Open questions, and the last ones closed (answered or withdrawn), so a card on the page can say what became of it. */
  private questions(): Question[] {
    const all = this.hive.questions({ open: false });
    const closed = all.filter((q) => q.state !== 'open').slice(-20);
    return all.filter((q) => q.state === 'open' || closed.includes(q));
  }

  private refreshActors(): void {
    if (this.listeners.size === 0) return;
    const data = this.actorsAndHosts();
    const key = JSON.stringify(data);
    if (key === this.lastActors) return;
    this.lastActors = key;
    this.publish({ type: 'actors', data });
  }

  private refreshQuestions(): void {
    if (this.listeners.size === 0) return;
    const data = this.questions();
    const key = JSON.stringify(data.map((q) => [q.id, q.state]));
    if (key === this.lastQuestions) return;
    this.lastQuestions = key;
    this.publish({ type: 'questions', data });
  }

  private deadLetters(): InspectorSnapshot['deadLetters'] {
    return listDeadLetters(this.hive.root)
      .slice(-DEAD_LETTERS_SHOWN)
      .reverse()
      .map((d) => ({
        name: d.name,
        error: String(d.reason?.error ?? 'no reason file'),
        code: typeof d.reason?.code === 'string' ? d.reason.code : null,
        source: typeof d.reason?.source === 'string' ? d.reason.source : null,
        at: typeof d.reason?.at === 'string' ? d.reason.at : null,
      }));
  }
}
