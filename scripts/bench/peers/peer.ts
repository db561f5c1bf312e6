import { Worker } from 'node:worker_threads';

/**
 * One system under `npm run bench:peers`: the same workload (8 echo agents, one client,
 * every message durable before it is acknowledged, each request answered exactly once).
 */
export interface Peer {
  readonly name: string;
  /** Durably enqueues requests for the agents (resolves once they are on disk) and wakes them. */
  send(requests: { id: string; to: string; body: string }[]): void | Promise<void>;
  /** Calls `listener` with the request ids whose replies are now durable in the client's inbox. */
  onReplies(listener: (requestIds: string[]) => void): () => void;
  /** After a round: was every request answered exactly once? */
  check(requestIds: string[]): PeerCheck | Promise<PeerCheck>;
  /** Process ids whose CPU time counts too (a server), beside this process's. */
  serverPids?: number[];
  close(): Promise<void>;
}

export interface PeerCheck {
  exactlyOnce: boolean;
  requests: number;
  missing: number;
  doubled: number;
  /** Requests the agents counted as handled. */
  handled: number;
}

/** One worker thread per agent running `entry` with `data(agent)`, each resolved once it says it is ready. */
export function startAgentWorkers(entry: URL, agents: string[], data: (agent: string) => Record<string, unknown>): Promise<Worker[]> {
  return Promise.all(
    agents.map(
      (agent) =>
        new Promise<Worker>((resolve, reject) => {
          const w = new Worker(entry, { workerData: data(agent) });
          w.once('message', () => resolve(w));
          w.once('error', reject);
        }),
    ),
  );
}

/** Every request answered exactly once, and the agents' counters match. */
export function checkCounts(requestIds: string[], replies: Map<string, number>, handled: number): PeerCheck {
  const missing = requestIds.filter((id) => !replies.has(id)).length;
  const doubled = requestIds.filter((id) => (replies.get(id) ?? 0) > 1).length;
  return { exactlyOnce: missing === 0 && doubled === 0 && handled === requestIds.length, missing, doubled, handled, requests: requestIds.length };
}
