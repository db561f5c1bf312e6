import fs from 'node:fs';
import path from 'node:path';
import type { HiveMessage } from '../protocol/message.ts';
import { memoryKey } from '../memory/cluster-memory.ts';
import { agentPaths } from '../layout/paths.ts';
import type { FencedFiles } from '../queue/jetstream-files.ts';
import type { Invariant } from './invariants.ts';

/** The client of a chaos run over machines (and of test:cluster): it sends every request. */
export const MACHINE_CLIENT = 'client';
const CLIENT = MACHINE_CLIENT;

/**
 * The invariants of `hive chaos --machines`, checked through the cluster once the run is
 * over: every request answered exactly once (as the client reads its inbox), each agent's
 * last commit counting exactly its requests, and every memory written once in the cluster
 * with every machine's mirror equal to it.
 */
export async function checkMachineInvariants(url: string, prefix: string, roots: string[], sent: Map<string, HiveMessage[]>, markers: Map<string, string[]>): Promise<Invariant[]> {
  const { createJetStreamTransport } = await import('../queue/jetstream-transport.ts');
  const t = await createJetStreamTransport({ servers: [url], prefix });
  const out: Invariant[] = [];
  const check = (name: string, problems: string[], ok: string) => out.push({ name, held: problems.length === 0, detail: problems.slice(0, 10).join('; ') || ok });
  try {
    const all = [...sent.values()].flat();
    // As the client reads its inbox: a repeated copy of a reply (same message id, marked
    // by the transport) is passed, not read as a second reply; a second reply with its own
    // id (a turn run twice) is counted.
    const count = async () => {
      const answers = new Map<string, number>();
      let repeats = 0;
      for (const e of await t.read(CLIENT, 0)) {
        if (e.duplicate) repeats++;
        else if (e.message.in_reply_to) answers.set(e.message.in_reply_to, (answers.get(e.message.in_reply_to) ?? 0) + 1);
      }
      return { answers, repeats };
    };
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      const { answers } = await count();
      if (all.every((m) => answers.has(m.id))) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    await new Promise((r) => setTimeout(r, 2_000)); // a duplicate would show up by now
    const { answers, repeats } = await count();
    const lost = all.filter((m) => !answers.has(m.id));
    const twice = all.filter((m) => (answers.get(m.id) ?? 0) > 1);
    const passed = repeats > 0 ? ` (${repeats} repeated cop${repeats === 1 ? 'y' : 'ies'} of a reply passed)` : '';
    check('every request answered exactly once', [...lost.map((m) => `${m.id} to ${m.to}: no reply`), ...twice.map((m) => `${m.id}: ${answers.get(m.id)} replies`)], `${all.length} requests, ${all.length} replies${passed}`);
    const states: string[] = [];
    for (const [agent, msgs] of sent) {
      const link = t.agent(agent);
      const at = await link.restore();
      link.close();
      const echoed = (at.context.brainState as { echoed?: number } | null)?.echoed ?? 0;
      if (at.context.handled !== msgs.length || echoed !== msgs.length) states.push(`${agent}: ${msgs.length} sent, last commit handled ${at.context.handled}, brain echoed ${echoed}`);
    }
    check("each agent's last commit counts exactly the requests sent to it", states, `${sent.size} agents`);
    out.push(await checkMemoryMirrors(t.files, roots, markers));
  } finally {
    t.close();
  }
  return out;
}

/**
 * How many lines of `text` are `marker` itself: a marker is never counted inside another
 * (chaos-memory-5-30 in chaos-memory-5-300 made a run fail that had written each once).
 */
export function markerCount(text: string, marker: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (line === marker) n++;
  return n;
}

/**
 * Every memory entry written (each a unique marker, per agent) is in the cluster's memory
 * of its agent exactly once, and every machine's mirror of that memory equals it.
 */
export async function checkMemoryMirrors(files: FencedFiles, roots: string[], markers: Map<string, string[]>): Promise<Invariant> {
  const problems: string[] = [];
  for (const [agent, list] of markers) {
    const stored = (await files.get(memoryKey(agent)))?.data.toString('utf8') ?? '';
    for (const m of list) {
      const n = markerCount(stored, m);
      if (n !== 1) problems.push(`${agent}: ${m} is in the cluster ${n} times`);
    }
    for (const root of roots) {
      let mirror = '';
      try {
        mirror = fs.readFileSync(agentPaths(root, agent).memory, 'utf8');
      } catch {
        mirror = '(missing)';
      }
      if (list.length > 0 && mirror !== stored) problems.push(`${agent}: the mirror in ${path.basename(root)} differs from the cluster's memory`);
    }
  }
  const entries = [...markers.values()].flat().length;
  return { name: "every memory written is in the cluster once, and every machine's mirror equals it", held: problems.length === 0, detail: problems.slice(0, 10).join('; ') || `${entries} entries` };
}
