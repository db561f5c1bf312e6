import { describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { tempRoot } from './helpers/temp.ts';
import { collectLines, startFixture } from './helpers/fixture.ts';
import { listInbox } from '../src/queue/inbox.ts';
import { readStateFile } from '../src/agent/state-store.ts';
import { seededRandom } from './helpers/power-loss/crash-states.ts';

/**
 * hive.send() under SIGKILL of the supervisor that made it (docs/architecture.md, "The
 * send log"): a send resolves once its entry is durable in the send log, while the router
 * in the same process routes earlier ones and the agents answer them. The process is
 * killed at random moments mid-load, several times; each new incarnation sends more.
 * Every acknowledged request gets exactly one reply; one that was being sent when the
 * process died gets at most one; each echo agent handled exactly the requests it answered.
 */

const AGENTS = 3;
const PER_INCARNATION = 300;
const KILLS = 4;

interface Incarnation {
  child: ChildProcess;
  acked: string[];
  sending: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  ackedCount: () => number;
  allSent: Promise<void>;
}

function start(root: string, tag: string): Promise<Incarnation> {
  const child = startFixture('sending-hive.ts', [root, String(AGENTS), String(PER_INCARNATION), tag]);
  const acked: string[] = [];
  const sending: string[] = [];
  let sentAll: () => void = () => undefined;
  const allSent = new Promise<void>((r) => (sentAll = r));
  return new Promise((resolve, reject) => {
    const { exited } = collectLines(child, (line) => {
      if (line.startsWith('acked ')) acked.push(line.slice(6));
      else if (line.startsWith('sending ')) sending.push(line.slice(8));
      else if (line === 'sent all') sentAll();
      else if (line.startsWith('ready ')) resolve({ child, acked, sending, exited, ackedCount: () => acked.length, allSent });
    });
    void exited.then((x) => reject(new Error(`the hive exited before ready: ${x.code} ${x.signal} ${x.stderr}`)));
  });
}

describe('hive.send() and a supervisor SIGKILL', () => {
  it(`${KILLS} SIGKILLs mid-load: every acknowledged send is answered exactly once, none twice, each handled once`, async () => {
    const root = tempRoot();
    const seed = Number(process.env.HIVE_TEST_SEED ?? Date.now() % 1_000_000);
    const rnd = seededRandom(seed);
    process.stdout.write(`send-kill: seed ${seed}\n`);
    const acked: string[] = [];
    const sending: string[] = [];
    for (let k = 0; k <= KILLS; k++) {
      const inc = await start(root, `i${k}`);
      if (k < KILLS) {
        // Kill after a random number of acknowledgements (between 10 % and 90 % of the sends).
        const after = Math.floor(PER_INCARNATION * (0.1 + 0.8 * rnd()));
        while (inc.ackedCount() < after) await new Promise((r) => setTimeout(r, 1));
        inc.child.kill('SIGKILL');
        const x = await inc.exited;
        expect(x.signal).toBe('SIGKILL');
      } else {
        await inc.allSent;
        const deadline = Date.now() + 60_000;
        const all = () => [...acked, ...inc.acked];
        while (Date.now() < deadline) {
          const answered = new Set(listInbox(root, 'client').map((e) => e.message?.in_reply_to));
          if (all().every((id) => answered.has(id))) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        inc.child.kill('SIGTERM');
        const x = await inc.exited;
        expect(x.code, x.stderr).toBe(0);
      }
      acked.push(...inc.acked);
      sending.push(...inc.sending);
    }

    const replies = new Map<string, number>();
    for (const e of listInbox(root, 'client')) {
      const to = e.message!.in_reply_to!;
      replies.set(to, (replies.get(to) ?? 0) + 1);
    }
    const twice = [...replies].filter(([, n]) => n > 1);
    expect(twice, 'answered more than once').toEqual([]);
    const lost = acked.filter((id) => !replies.has(id));
    expect(lost, `acknowledged but never answered (seed ${seed})`).toEqual([]);
    const sent = new Set(sending);
    expect([...replies.keys()].filter((id) => !sent.has(id)), 'replies to requests never sent').toEqual([]);
    expect(acked.length).toBeGreaterThan(PER_INCARNATION); // the kills came mid-load, not before
    let handled = 0;
    for (let a = 0; a < AGENTS; a++) handled += readStateFile(root, `echo-${a}`)!.snapshot.context.handled;
    expect(handled, 'requests handled by the echo agents').toBe(replies.size);
  }, 240_000);
});
