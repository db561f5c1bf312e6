/**
 * What a cluster setup can promise (docs/architecture.md, "Cluster mode: what survives
 * what"), from what the client can see: the server's version and the streams' replicas.
 * JetStream acknowledges a message once it is in its file store; before 2.10.23 (and
 * without `sync_interval: always`) that store is flushed to disk periodically, so an
 * acknowledged message can be lost when the machine loses power (Jepsen's 2025 analysis of
 * NATS showed this). Replicas decide whether the loss of one NATS machine loses data.
 */
export interface DurabilityReport {
  serverVersion: string;
  replicas: number;
  /** What this setup survives, in words. */
  survives: string[];
  /** What it does not, in words: each one is logged and shown by `hive status`. */
  warnings: string[];
}

function atLeast(version: string, want: [number, number, number]): boolean {
  const got = version.replace(/^v/, '').split(/[.-]/).slice(0, 3).map(Number);
  for (let i = 0; i < 3; i++) {
    const g = got[i] ?? 0;
    if (Number.isNaN(g)) return false;
    if (g !== want[i]) return g > want[i]!;
  }
  return true;
}

export function durabilityOf(serverVersion: string, replicas: number): DurabilityReport {
  const survives = ['a crash of any Hive process (SIGKILL included): nothing acknowledged is lost or repeated'];
  const warnings: string[] = [];
  const canSyncAlways = atLeast(serverVersion, [2, 10, 23]);
  if (replicas >= 3) survives.push(`the loss of one of the ${replicas} NATS machines holding each stream`);
  else warnings.push(`each stream has ${replicas} replica${replicas === 1 ? '' : 's'}: losing the NATS machine that holds it loses the hive's messages (use replicas: 3 on a three-node NATS cluster)`);
  if (canSyncAlways) survives.push('power loss, if the servers run with `sync_interval: always` (Hive cannot see that setting: check the server config)');
  else {
    warnings.push(
      `nats-server ${serverVersion} flushes its store to disk periodically (no sync_interval: always before 2.10.23): ` +
        (replicas >= 3 ? 'a power loss of a majority of the NATS machines at once can lose acknowledged messages' : 'a power loss of the NATS machine can lose acknowledged messages'),
    );
  }
  if (replicas > 1 && !atLeast(serverVersion, [2, 10, 0])) {
    // nats-server#4320: the expected-sequence checks ran before replication, so two
    // publishers racing on a replicated stream could both be accepted.
    warnings.push(
      `nats-server ${serverVersion} may accept two racing writes that each expect the same last sequence on a replicated stream (nats-server#4320): ` +
        'two machines could then both take one lease, or a stale owner and the new one both commit one turn (its messages keep their ids, so each receiver keeps one of them); use nats-server 2.10 or later with replicas',
    );
  }
  return { serverVersion, replicas, survives, warnings };
}
