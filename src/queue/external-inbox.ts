import { HiveError } from '../errors.ts';
import type { HiveMessage } from '../protocol/message.ts';
import { readClusterFile } from '../supervisor/cluster-file.ts';
import { committedCursor } from './committed-cursor.ts';
import { acknowledgeThrough } from './external-ack.ts';
import { listInbox, readInbox, type InboxEntry } from './inbox.ts';
import { openToolTransport } from './tool-transport.ts';
import type { Transport } from './transport.ts';

/**
 * The inbox of an agent no actor of Hive's runs (an agent CLI), as the hooks socket and
 * `hive mcp` read and acknowledge it: the folder's on one machine; in cluster mode the
 * transport's (its inbox and commit records are in JetStream), decided by `cluster.json`
 * at each call, the transport opened once.
 */
export interface ExternalInbox {
  /** The committed cursor: the last seq acknowledged. */
  cursor(agent: string): Promise<number>;
  /**
   * Entries after the committed cursor, up to `limit` (a repeated copy of a message is left
   * out). `passRepeats`, for an agent no actor of Hive's runs (the caller checked): when
   * nothing but repeated copies follows the cursor, the cursor is moved past them, as an
   * agent passes them (best effort: a failure leaves them for the next look).
   */
  unread(agent: string, limit: number, options?: { passRepeats?: boolean }): Promise<InboxEntry[]>;
  /** The message with this id the agent received (handled or not), or null. */
  find(agent: string, id: string): Promise<HiveMessage | null>;
  /**
   * Marks the inbox handled through `seq`: forward only, never past what was delivered
   * (`beyond` names the last delivered seq; nothing moved). In cluster mode a commit of the
   * agent's record, fenced like every commit (tried again on a conflict).
   */
  acknowledgeThrough(agent: string, seq: number): Promise<{ cursor: number; moved: boolean } | { beyond: number }>;
  close(): void;
}

export function externalInbox(root: string): ExternalInbox {
  let opened: Promise<Transport> | null = null;
  const cluster = (): Promise<Transport> | null => {
    if (!readClusterFile(root)) return null;
    opened ??= openToolTransport(root).catch((err: unknown) => ((opened = null), Promise.reject(err)));
    return opened;
  };
  return {
    async cursor(agent) {
      const c = cluster();
      return c ? (await c).cursor(agent) : committedCursor(root, agent);
    },
    async unread(agent, limit, options = {}) {
      const c = cluster();
      if (!c) return readInbox(root, agent, committedCursor(root, agent), limit).entries;
      const t = await c;
      // A repeated copy of a message (marked by the transport) is not shown: acknowledging
      // the next message moves the cursor past it too, and copies with nothing after them
      // are passed here for an agent without an actor (else the depth would show them; an
      // actor's own cursor moves only with its turns).
      const out: InboxEntry[] = [];
      const cursor = await t.cursor(agent);
      let after = cursor;
      while (out.length < limit) {
        const entries = await t.read(agent, after, limit - out.length);
        if (entries.length === 0) break;
        out.push(...entries.filter((e) => !e.duplicate));
        after = entries.at(-1)!.seq;
      }
      if (options.passRepeats && out.length === 0 && after > cursor) await acknowledgeInCluster(t, agent, after).catch(() => undefined);
      return out;
    },
    async find(agent, id) {
      const c = cluster();
      const entries = c ? await (await c).read(agent, 0) : listInbox(root, agent);
      return entries.find((e) => e.id === id)?.message ?? null;
    },
    async acknowledgeThrough(agent, seq) {
      const c = cluster();
      return c ? acknowledgeInCluster(await c, agent, seq) : acknowledgeThrough(root, agent, seq);
    },
    close() {
      void opened?.then((t) => t.close(), () => undefined);
    },
  };
}

/** A commit of the agent's record with its cursor at `seq`, fenced like every commit (tried again on a conflict). */
async function acknowledgeInCluster(t: Transport, agent: string, seq: number): Promise<{ cursor: number; moved: boolean } | { beyond: number }> {
  for (let attempt = 0; ; attempt++) {
    const link = t.agent(agent);
    try {
      const at = await link.restore();
      if (seq <= at.context.cursor) return { cursor: at.context.cursor, moved: false };
      const last = at.context.cursor + (await t.depth(agent));
      if (seq > last) return { beyond: last };
      await link.commit({ ...at.context, cursor: seq }, []);
      return { cursor: seq, moved: true };
    } catch (err) {
      // Another acknowledger committed in between: look again at what is there now.
      if (!(err instanceof HiveError && err.code === 'E_CONFLICT') || attempt >= 5) throw err;
    } finally {
      link.close();
    }
  }
}
