import { describe, expect, it } from 'vitest';
import { createMessage, type HiveMessage } from '../../src/protocol/message.ts';
import type { Transport } from '../../src/queue/transport.ts';

/** What a conformance run needs: a fresh transport where agents `a`, `b`, `c` exist. */
export type TransportFactory = () => Promise<Transport>;

/** A new transport instance over the same store as `t` (what a restarted process opens). */
export type TransportReopener = (t: Transport) => Promise<Transport>;

function msg(from: string, to: string, body: string): HiveMessage {
  return createMessage({ from, to, act: 'inform', body });
}

/**
 * The contract every transport must keep (docs/architecture.md, "Delivery", "Transport"). Run it once per implementation:
 * `describeTransportConformance('fs', async () => createFsTransport(root))`.
 */
export function describeTransportConformance(name: string, make: TransportFactory, reopen: TransportReopener): void {
  describe(`transport conformance: ${name}`, () => {
    it('send is durable and pending returns messages in send order', async () => {
      const t = await make();
      const sent = Array.from({ length: 20 }, (_, i) => msg('a', 'b', `m${i}`));
      await t.send(sent.slice(0, 10));
      for (const m of sent.slice(10)) await t.send([m]);
      const pending = await t.pending('a');
      expect(pending.map((p) => p.message?.body)).toEqual(sent.map((m) => m.body));
    });

    it('settle removes routed items from pending', async () => {
      const t = await make();
      await t.send([msg('a', 'b', '1'), msg('a', 'b', '2')]);
      const [first] = await t.pending('a');
      await t.settle('a', [first!.ref]);
      expect((await t.pending('a')).map((p) => p.message?.body)).toEqual(['2']);
    });

    it('deliver numbers entries 1, 2, 3... without gaps, across batches', async () => {
      const t = await make();
      const r1 = await t.deliver('b', [msg('a', 'b', '1'), msg('a', 'b', '2')]);
      const r2 = await t.deliver('b', [msg('c', 'b', '3')]);
      expect([...r1, ...r2].map((o) => (o.status === 'delivered' ? o.seq : -1))).toEqual([1, 2, 3]);
    });

    it('deliver is idempotent on message id, within and across batches', async () => {
      const t = await make();
      const m1 = msg('a', 'b', 'x');
      const m2 = msg('a', 'b', 'y');
      await t.deliver('b', [m1]);
      const again = await t.deliver('b', [m1, m2, m2]);
      expect(again.map((o) => o.status)).toEqual(['duplicate', 'delivered', 'duplicate']);
      expect((await t.read('b', 0)).map((e) => e.message.body)).toEqual(['x', 'y']);
    });

    it('read returns entries after a seq, in order, with a limit', async () => {
      const t = await make();
      await t.deliver('c', Array.from({ length: 5 }, (_, i) => msg('a', 'c', String(i))));
      expect((await t.read('c', 2)).map((e) => e.seq)).toEqual([3, 4, 5]);
      expect((await t.read('c', 0, 2)).map((e) => e.message.body)).toEqual(['0', '1']);
    });

    it('cursor starts at 0 and an agent commit moves it', async () => {
      const t = await make();
      expect(await t.cursor('b')).toBe(0);
      const link = t.agent('b');
      const at = await link.restore();
      await link.commit({ ...at.context, cursor: 7 }, []);
      expect(await t.cursor('b')).toBe(7);
    });

    it('depth is what was delivered after the committed cursor', async () => {
      const t = await make();
      expect(await t.depth('c')).toBe(0);
      await t.deliver('c', Array.from({ length: 5 }, (_, i) => msg('a', 'c', String(i))));
      expect(await t.depth('c')).toBe(5);
      const link = t.agent('c');
      await link.commit({ ...(await link.restore()).context, cursor: 3 }, []);
      expect(await t.depth('c')).toBe(2);
    });

    it('concurrent deliveries to one recipient get distinct gap-free seqs', async () => {
      const t = await make();
      const batches = Array.from({ length: 10 }, (_, k) => Array.from({ length: 10 }, (_, i) => msg('a', 'b', `${k}.${i}`)));
      const results = await Promise.all(batches.map((b) => t.deliver('b', b)));
      const seqs = results.flat().map((o) => (o.status === 'delivered' ? o.seq : -1)).sort((x, y) => x - y);
      expect(seqs).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    });

    it('deliver to a recipient with no inbox fails with E_UNKNOWN_AGENT and delivers nothing', async () => {
      const t = await make();
      await expect(t.deliver('nobody', [msg('a', 'nobody', 'x')])).rejects.toMatchObject({ code: 'E_UNKNOWN_AGENT' });
      expect(await t.read('b', 0)).toEqual([]);
    });

    it('deadLetterCopy may be repeated for one key (a re-run pass) and leaves pending alone', async () => {
      const t = await make();
      const m = msg('a', 'b', 'copy');
      await t.send([m]);
      await t.deadLetterCopy(m, 'undeliverable-b-1.json', { error: 'test', source: 'conformance' });
      await t.deadLetterCopy(m, 'undeliverable-b-1.json', { error: 'test', source: 'conformance' });
      expect((await t.pending('a')).map((p) => p.message?.id)).toEqual([m.id]);
    });

    it('a reader may go back: reading from an earlier seq after a later read returns the same entries (a turn retried after a crash)', async () => {
      const t = await make();
      await t.deliver('b', Array.from({ length: 6 }, (_, i) => msg('a', 'b', String(i))));
      expect((await t.read('b', 0, 3)).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await t.read('b', 3, 3)).map((e) => e.seq)).toEqual([4, 5, 6]);
      expect((await t.read('b', 1, 2)).map((e) => e.message.body)).toEqual(['1', '2']);
      expect((await t.read('b', 6)).map((e) => e.seq)).toEqual([]);
      await t.deliver('b', [msg('a', 'b', 'later')]);
      expect((await t.read('b', 6)).map((e) => e.message.body)).toEqual(['later']);
    });

    it('a new instance over the same store (a restart) goes on numbering after the last seq, knows the delivered ids, and reads what the old one delivered', async () => {
      const first = await make();
      const old = [msg('a', 'b', '1'), msg('a', 'b', '2')];
      await first.deliver('b', old);
      const link = first.agent('b');
      await link.commit({ ...(await link.restore()).context, cursor: 1 }, []);
      first.close();
      const second = await reopen(first);
      expect(await second.cursor('b')).toBe(1);
      expect((await second.read('b', 1)).map((e) => e.id)).toEqual([old[1]!.id]);
      const outcomes = await second.deliver('b', [old[0]!, msg('a', 'b', '3')]);
      expect(outcomes).toMatchObject([{ status: 'duplicate' }, { status: 'delivered', seq: 3 }]);
    });

    it('reject takes an item out of pending', async () => {
      const t = await make();
      await t.send([msg('a', 'b', 'bad')]);
      const [item] = await t.pending('a');
      await t.reject('a', item!.ref, { error: 'test rejection', source: 'conformance' });
      expect(await t.pending('a')).toEqual([]);
    });

    // ---- the agent's side (AgentLink) ---------------------------------------------------

    it('agent: a new agent restores fresh, at commit 0 and cursor 0', async () => {
      const t = await make();
      const at = await t.agent('b').restore();
      expect(at).toMatchObject({ from: 'fresh', commit: 0, context: { agentId: 'b', cursor: 0 }, messages: [] });
    });

    it('agent: fetch reads what was delivered after the cursor; a commit is numbered, moves the cursor and is what a new instance restores', async () => {
      const t = await make();
      await t.deliver('b', [msg('a', 'b', '1'), msg('a', 'b', '2'), msg('c', 'b', '3')]);
      const link = t.agent('b');
      const at = await link.restore();
      const work = await link.fetch(at.context.cursor, 2);
      expect(work.map((e) => [e.seq, e.message.body])).toEqual([[1, '1'], [2, '2']]);
      expect(await link.commit({ ...at.context, cursor: 2, handled: 2, turns: 1, brainState: { seen: 2 } }, [])).toBe(1);
      expect(await t.cursor('b')).toBe(2);
      t.close();
      const again = (await reopen(t)).agent('b');
      const back = await again.restore();
      expect(back).toMatchObject({ from: 'state', commit: 1, context: { cursor: 2, handled: 2, brainState: { seen: 2 } } });
      expect((await again.fetch(back.context.cursor)).map((e) => e.message.body)).toEqual(['3']);
      expect(await again.commit({ ...back.context, cursor: 3 }, [])).toBe(2);
    });

    it('agent: the messages a commit emits are pending for the agent in commit order; settled ones never come back, after a restart neither', async () => {
      const t = await make();
      const link = t.agent('a');
      const at = await link.restore();
      const [m1, m2, m3] = [msg('a', 'b', 'r1'), msg('a', 'c', 'r2'), msg('a', 'b', 'r3')];
      await link.commit({ ...at.context, turns: 1 }, [m1!, m2!]);
      await link.commit({ ...at.context, turns: 2 }, [m3!]);
      const pending = await t.pending('a');
      expect(pending.map((p) => p.message?.id)).toEqual([m1!.id, m2!.id, m3!.id]);
      await t.settle('a', pending.slice(0, 2).map((p) => p.ref));
      expect((await t.pending('a')).map((p) => p.message?.id)).toEqual([m3!.id]);
      t.close();
      const second = await reopen(t);
      const restored = await second.agent('a').restore();
      expect(restored.messages.map((m) => m.id)).toEqual([m3!.id]);
      const left = await second.pending('a');
      expect(left.map((p) => p.message?.id)).toEqual([m3!.id]);
      await second.settle('a', left.map((p) => p.ref));
      expect(await second.pending('a')).toEqual([]);
    });

    it('agent: onWork is called after a delivery made by another instance over the same store (the router elsewhere)', async () => {
      const router = await make();
      const agentSide = await reopen(router);
      const link = agentSide.agent('b');
      await link.restore();
      let calls = 0;
      const woken = new Promise<void>((resolve) => link.onWork(() => (calls += 1) && resolve()));
      await router.deliver('b', [msg('a', 'b', 'wake up')]);
      await Promise.race([woken, new Promise((_, reject) => setTimeout(() => reject(new Error('onWork was not called within 5 s of a delivery')), 5_000))]);
      expect(calls).toBeGreaterThan(0);
      expect((await link.fetch(0)).map((e) => e.message.body)).toEqual(['wake up']);
      agentSide.close();
    });

    it('agent: hasEntriesAfter, where a transport answers it, says whether fetch would find anything', async () => {
      const t = await make();
      const link = t.agent('c');
      await link.restore();
      if (!link.hasEntriesAfter) return; // optional: without it the caller reads
      expect(link.hasEntriesAfter(0)).toBe(false);
      await t.deliver('c', [msg('a', 'c', 'x'), msg('a', 'c', 'y')]);
      for (const after of [0, 1, 2]) expect(link.hasEntriesAfter(after)).toBe((await link.fetch(after)).length > 0);
      expect(link.hasEntriesAfter(1)).toBe(true);
      expect(link.hasEntriesAfter(2)).toBe(false);
      link.close();
    });

    it('agent: a link stops calling onWork once unsubscribed', async () => {
      const t = await make();
      const link = t.agent('c');
      await link.restore();
      let calls = 0;
      const off = link.onWork(() => (calls += 1));
      off();
      await t.deliver('c', [msg('a', 'c', 'x')]);
      await new Promise((r) => setTimeout(r, 300));
      expect(calls).toBe(0);
    });
  });
}
