import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Peer } from './peer.ts';

/** CPU time (ms) of another process, every thread (0 once it is gone: a failover phase kills one). */
export function processCpuMs(pid: number): number {
  const tick = 100; // USER_HZ on Linux
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / tick) * 1000;
  } catch {
    return 0;
  }
}

/** CPU time (ms) of this process (every thread) and of the given server processes (gone ones count 0). */
export function cpuMs(pids: number[]): number {
  const self = process.cpuUsage();
  return (self.user + self.system) / 1000 + pids.reduce((ms, pid) => ms + processCpuMs(pid), 0);
}

/**
 * The requests of a peer benchmark (`bench:peers`, `bench:cluster`): round-robin over
 * `agents`, every id kept per peer (`sent`) for the exactly-once check at the end.
 */
export function peerWorkload(agents: string[], progress: (what: string) => void) {
  const sent: Record<string, string[]> = {};
  const requests = (peer: Peer, n: number, tag: string, to?: string) => {
    const out = Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}-${randomUUID().slice(0, 8)}`, to: to ?? agents[i % agents.length]!, body: `${tag} ${i}` }));
    (sent[peer.name] ??= []).push(...out.map((r) => r.id));
    return out;
  };

  /** Sends `n` requests at once; resolves when every reply is durable in the client's inbox. */
  const backlog = async (peer: Peer, n: number, tag: string): Promise<{ pairsPerSecond: number; cpuMsPerPair: number }> => {
    const batch = requests(peer, n, tag);
    const waiting = new Set(batch.map((r) => r.id));
    const done = new Promise<void>((resolve) => {
      const off = peer.onReplies((ids) => {
        for (const id of ids) waiting.delete(id);
        if (waiting.size === 0) {
          off();
          resolve();
        }
      });
    });
    const cpu0 = cpuMs(peer.serverPids ?? []);
    const t0 = performance.now();
    progress(`${peer.name}: backlog ${tag} (${n} requests)`);
    await peer.send(batch);
    await done;
    const elapsed = performance.now() - t0;
    return { pairsPerSecond: (n / elapsed) * 1000, cpuMsPerPair: (cpuMs(peer.serverPids ?? []) - cpu0) / n };
  };

  /** One request in flight: durable send → its reply durable in the client's inbox (ms). */
  const roundTrip = async (peer: Peer, tag: string, to?: string): Promise<number> => {
    const [r] = requests(peer, 1, tag, to);
    const replied = new Promise<void>((resolve) => {
      const off = peer.onReplies((ids) => {
        if (ids.includes(r!.id)) {
          off();
          resolve();
        }
      });
    });
    const t0 = performance.now();
    await peer.send([r!]);
    await replied;
    return performance.now() - t0;
  };

  return { sent, requests, backlog, roundTrip };
}
