import { GOD_ID } from '../protocol/agent-id.ts';
import type { InboxRow } from '../queue/inbox.ts';
import { inboxRows, openToolTransport } from '../queue/tool-transport.ts';
import type { Transport } from '../queue/transport.ts';

/**
 * Cluster mode: god's inbox is a JetStream stream, not a local log. The supervisor keeps a
 * copy of it, read again whenever something is delivered to god (and every `pollMs`), so
 * its questions and answers (`hive ask`, `hive answer`, the API, the inspector) see what
 * every machine delivered to god.
 */
export class GodInboxView {
  private rows: InboxRow[] = [];
  private reading: Promise<void> | null = null;
  private again = false;
  private stopListening: (() => void) | null = null;

  private constructor(private readonly transport: Transport) {}

  static async start(root: string): Promise<GodInboxView> {
    const view = new GodInboxView(await openToolTransport(root));
    await view.refresh();
    view.stopListening = view.transport.agent(GOD_ID).onWork(() => void view.refresh());
    return view;
  }

  /** The rows as last read. */
  current(): InboxRow[] {
    return this.rows;
  }

  /** Reads god's inbox again (one read at a time; a call meanwhile reads once more after it). */
  refresh(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = inboxRows(this.transport, GOD_ID)
      .then((rows) => void (this.rows = rows))
      .catch(() => undefined) // NATS not answering: the last copy stands, the next wake reads again
      .finally(() => {
        this.reading = null;
        if (this.again) {
          this.again = false;
          void this.refresh();
        }
      });
    return this.reading;
  }

  close(): void {
    this.stopListening?.();
    this.transport.close();
  }
}
