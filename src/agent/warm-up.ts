import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { AgentActor } from './agent-actor.ts';
import { createBrain } from '../brains/create.ts';
import { createFsTransport } from '../queue/fs-transport.ts';
import { ensureAgent, ensureHive } from '../layout/ensure.ts';
import { agentPaths } from '../layout/paths.ts';
import { createMessage } from '../protocol/message.ts';
import type { AgentSettings } from '../protocol/worker.ts';
import { isAlive } from '../lock/owner.ts';
import type { TestSeams } from '../testing/seams.ts';

/** The scratch agent's id: random, so no agent of the hive's in this thread shares the actors' per-id table with it. */
const WARM_ID = `warm-up-${randomUUID().slice(0, 12)}`;
const PREFIX = 'hive-warm-up-';
/** How long the scratch turn may take before the warm-up gives up on it. */
const LIMIT_MS = 10_000;

/**
 * Runs one turn of a scratch echo agent in a scratch hive outside the real one (on tmpfs
 * where there is one, so its flushes cost nothing), then removes it: a worker's turn code
 * (the inbox read, the actor's machine, the commit) is compiled before the first real
 * message reaches it. In a hive of 10,000 agents pooled 100 per worker a request to an
 * agent whose worker had not yet run a turn took ~28 ms from routing to its turn (p90
 * 67 ms, max 149 ms) against ~6 ms once its worker had (bench:scale; docs/architecture.md,
 * "Idle agents cost nothing"). Best effort: whatever goes wrong is dropped, the hive is
 * never touched. Resolves with the ms it took (null when it did not finish).
 */
export async function warmTurnPath(settings: AgentSettings): Promise<number | null> {
  const t0 = performance.now();
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  let root: string | null = null;
  let actor: AgentActor | null = null;
  let transport: ReturnType<typeof createFsTransport> | null = null;
  try {
    sweepStale(base);
    root = fs.mkdtempSync(path.join(base, `${PREFIX}${process.pid}-`));
    await ensureHive(root);
    const spec = { id: WARM_ID, name: 'Warm-up', role: 'warm-up', brain: { kind: 'echo' as const } };
    await ensureAgent(root, spec);
    transport = createFsTransport(root);
    await transport.deliver(WARM_ID, [createMessage({ from: 'god', to: WARM_ID, act: 'request', body: 'warm up' })]);
    const brain = await createBrain(spec.brain, { root, agentId: WARM_ID, agentName: spec.name, agentDir: agentPaths(root, WARM_ID).dir });
    let turned: () => void = () => undefined;
    const committed = new Promise<boolean>((resolve) => {
      turned = () => resolve(true);
      setTimeout(() => resolve(false), LIMIT_MS).unref();
    });
    actor = new AgentActor({ root, spec, brain, settings, emit: (e) => e.type === 'actor.processed' && turned(), onFatal: () => undefined, transport });
    await actor.start();
    if (!(await committed)) return null;
    return performance.now() - t0;
  } catch {
    return null;
  } finally {
    await actor?.stop(1_000).catch(() => undefined);
    try {
      transport?.close();
      if (root) fs.rmSync(root, { recursive: true, force: true });
    } catch {
      // a scratch folder left behind is swept by the next worker's warm-up
    }
  }
}

/**
 * Whether a worker with these test seams warms up: not with a crash point or a planted bug
 * armed for the hive's turns (it would fire in the scratch turn instead). The other seams
 * leave turns alone, `faultOps` too, which every `hive chaos` and bench:scale run has
 * (docs/architecture.md, "Idle agents cost nothing").
 */
export function warmsUp(seams: TestSeams | undefined): boolean {
  return !seams?.crashAt && !seams?.plant;
}

/** Removes scratch hives of processes that are gone (killed during their warm-up). */
function sweepStale(base: string): void {
  try {
    for (const name of fs.readdirSync(base)) {
      if (!name.startsWith(PREFIX)) continue;
      const pid = Number(name.slice(PREFIX.length).split('-')[0]);
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || isAlive(pid)) continue;
      fs.rmSync(path.join(base, name), { recursive: true, force: true });
    }
  } catch {
    // best effort
  }
}
