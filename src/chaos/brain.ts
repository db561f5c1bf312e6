// The chaos workload's brain. Counts what it handles in its state (so double handling
// shows), answers every request exactly once, throws on command, asks the people.
//   "chaos:throw-once ..."  throws the first time it sees this message id (marker file)
//   "chaos:ask ..."         asks god; replies to the requester when the answer arrives
import fs from 'node:fs';
import path from 'node:path';
import { defineBrain } from '../brains/define.ts';

interface State {
  [key: string]: unknown;
  requests?: number;
  broadcasts?: number;
  asking?: Record<string, { requester: string; request: string }>;
}

export default defineBrain((input, ctx) => {
  if (input.kind !== 'message') return;
  const m = input.message;
  const state = ctx.state as State;
  if (m.to === 'broadcast') {
    state.broadcasts = (state.broadcasts ?? 0) + 1;
    return;
  }
  // The answer comes back in the question's conversation, which is the request's.
  if (m.from === 'god' && state.asking?.[m.conversation]) {
    const pending = state.asking[m.conversation]!;
    state.asking = { ...state.asking };
    delete state.asking[m.conversation];
    ctx.send(pending.requester, 'inform', `answered ${m.body}`, { in_reply_to: pending.request });
    return;
  }
  if (m.act !== 'request') return;
  if (m.body.startsWith('chaos:throw-once')) {
    const marker = path.join(ctx.agentDir, `chaos-threw-${m.id}`);
    if (!fs.existsSync(marker)) {
      fs.writeFileSync(marker, '');
      throw new Error(`chaos: planned brain failure on ${m.id}`);
    }
  }
  state.requests = (state.requests ?? 0) + 1;
  if (m.body.startsWith('chaos:ask')) {
    state.asking = { ...(state.asking ?? {}), [m.conversation]: { requester: m.from, request: m.id } };
    ctx.ask(`May I proceed with ${m.id}?`, { subject: 'chaos question' });
    return;
  }
  ctx.reply(`ack ${m.id}`);
});
