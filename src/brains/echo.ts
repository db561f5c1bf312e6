import type { Brain, BrainOutput, BrainTurn } from './types.ts';

/**
 * The built-in echo brain: answers each request or query with an `inform` whose
 * `in_reply_to` is the request id and whose body echoes it. Counts what it answered
 * in its state. Other acts and timers are acknowledged silently.
 */
export function createEchoBrain(options: { delayMs?: number } = {}): Brain {
  return {
    kind: 'echo',
    async handle(turn: BrainTurn): Promise<BrainOutput> {
      const previous = (turn.state ?? {}) as { echoed?: number };
      if (turn.input.kind !== 'message') return { messages: [] };
      const m = turn.input.message;
      if (m.act !== 'request' && m.act !== 'query') return { messages: [] };
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
      return {
        messages: [{ to: m.from, act: 'inform', in_reply_to: m.id, subject: m.subject ? `Re: ${m.subject}` : '', body: m.body }],
        state: { echoed: (previous.echoed ?? 0) + 1 },
      };
    },
  };
}
