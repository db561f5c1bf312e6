import type { HiveMessage } from '../protocol/message.ts';
import { writeOutbox } from '../queue/outbox.ts';
import { appendEvent } from '../log/event-log.ts';
import { errorMessage } from '../errors.ts';
import { isTransientResourceError, shortageDelay } from '../fs/shortage.ts';

/**
 * The supervisor's notices to god (an actor failed, a provider switched). Each is written
 * into the `hive` agent's outbox and the router told. When the disk is full the notice is
 * kept and written again with backoff until it goes through, so god hears of it once the
 * disk allows; one still unwritten when the hive closes is logged as lost (`hive.notice-lost`),
 * so the log never claims god was told when it was not.
 */
export class GodNotices {
  private readonly waiting: HiveMessage[] = [];
  private timer: NodeJS.Timeout | null = null;
  private attempt = 0;

  constructor(
    private readonly root: string,
    private readonly kick: (senders: string[]) => void,
    private readonly write: (notice: HiveMessage) => void = (notice) => writeOutbox(root, [notice]),
  ) {}

  /** Writes the notice now, or as soon as the disk has room. */
  post(notice: HiveMessage): void {
    this.waiting.push(notice);
    this.flush();
  }

  /** Notices not written yet (the disk is still full). */
  pending(): number {
    return this.waiting.length;
  }

  /** Stops retrying; what is still waiting is logged as not delivered. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const n of this.waiting.splice(0)) appendEvent(this.root, { type: 'hive.notice-lost', id: n.id, subject: n.subject, error: 'the hive closed while the disk was full' });
  }

  private flush(): void {
    while (this.waiting.length > 0) {
      const notice = this.waiting[0]!;
      try {
        this.write(notice);
      } catch (err) {
        if (isTransientResourceError(err)) {
          this.retryLater();
          return;
        }
        this.waiting.shift();
        appendEvent(this.root, { type: 'hive.notice-failed', id: notice.id, subject: notice.subject, error: errorMessage(err) });
        continue;
      }
      this.waiting.shift();
      this.attempt = 0;
      appendEvent(this.root, { type: 'hive.notice-sent', id: notice.id, subject: notice.subject });
      this.kick([notice.from]);
    }
  }

  private retryLater(): void {
    if (this.timer) return;
    const delay = shortageDelay(this.attempt++);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, delay);
    this.timer.unref();
  }
}
