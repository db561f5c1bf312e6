import { describe, expect, it } from 'vitest';
import { createClusterTransport } from '../src/queue/cluster-transport.ts';
import type { FsTransport } from '../src/queue/fs-transport.ts';
import type { JetStreamTransport } from '../src/queue/jetstream-transport.ts';
import type { PendingItem, PendingOptions } from '../src/queue/transport.ts';
import { createMessage } from '../src/protocol/message.ts';

/**
 * One machine's message path in cluster mode (src/queue/cluster-transport.ts), over stand-ins
 * for its two halves that record what they are asked: JetStream's pending items and the local
 * folder's files.
 */
function machine(local: string[]) {
  const asked = { js: [] as string[], files: [] as { sender: string; options: PendingOptions | undefined }[], released: [] as string[] };
  const fromNats: PendingItem = { ref: 'c7.0', message: createMessage({ from: 'a', to: 'b', act: 'inform', body: 'over NATS' }), error: null };
  const js = {
    async pending(sender: string) {
      asked.js.push(sender);
      return [fromNats];
    },
    release(sender: string) {
      asked.released.push(sender);
    },
  } as unknown as JetStreamTransport;
  const files = {
    async pending(sender: string, _limit?: number, options?: PendingOptions) {
      asked.files.push({ sender, options });
      return [];
    },
  } as unknown as FsTransport;
  const transport = createClusterTransport(js, files, { local: new Set(local), isRecipient: () => true });
  return { transport, asked };
}

describe('cluster transport: what a look at a sender reads', () => {
  it("a light look (a publish heard on NATS) passes `files: false` on: the sender's local outbox folder and send log are not read", async () => {
    const { transport, asked } = machine(['a']);
    expect((await transport.pending('a', undefined, { files: false })).map((p) => p.ref)).toEqual(['js/c7.0']);
    expect(asked.files).toEqual([{ sender: 'a', options: { files: false } }]);
    await transport.pending('a'); // a full look (a file event, the sweep, the poll)
    expect(asked.files.at(-1)).toEqual({ sender: 'a', options: undefined });
    expect(asked.js).toEqual(['a', 'a']);
  });

  it("a sender that runs on another machine: its NATS subjects are that machine's to route (its feeds here let go), only the local folder's files are read here", async () => {
    const { transport, asked } = machine(['a']);
    expect(await transport.pending('b')).toEqual([]);
    expect(asked.js).toEqual([]);
    expect(asked.released).toEqual(['b']);
    expect(asked.files.map((f) => f.sender)).toEqual(['b']);
  });
});
