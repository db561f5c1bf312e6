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
