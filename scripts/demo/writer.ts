// The demo's writer: asks the people which tone to use (an ASK ME card for god) and
// arms a durable timer. It answers the planner when god replies, or after the timer
// fires with the default tone, withdrawing its question then; the timer survives restarts
// like everything else.
import { defineBrain } from 'hive-runtime/brain';

const WAIT_MS = Number(process.env.HIVE_DEMO_WAIT_MS ?? 20_000);

interface Job {
  [key: string]: string;
  requestId: string;
  requester: string;
  brief: string;
  conversation: string;
}

function draft(job: Job, tone: string): string {
  return `(${tone}) Announcing: ${job.brief.replace(/^Draft a short announcement for:\s*/i, '')}`;
}

export default defineBrain((input, ctx) => {
  const job = ctx.state.job as Job | undefined;
  if (input.kind === 'timer' && input.timer.name === 'tone-deadline' && job) {
    ctx.send(job.requester, 'inform', draft(job, 'formal, the default: nobody answered in time'), { in_reply_to: job.requestId });
    // The card for the people goes away: an answer now would change nothing.
    ctx.withdraw({ conversation: job.conversation, reason: 'nobody answered in time; the writer took the default (formal)' });
    delete ctx.state.job;
    return;
  }
  if (input.kind !== 'message') return;
  const m = input.message;
  if (m.act === 'request' && !job) {
    ctx.state.job = { requestId: m.id, requester: m.from, brief: m.body, conversation: m.conversation };
    ctx.ask('Which tone should the announcement take: formal or playful?', { subject: 'Tone?' });
    ctx.schedule('tone-deadline', WAIT_MS);
    return;
  }
  if (m.from === 'god' && job && (m.act === 'inform' || m.act === 'agree')) {
    ctx.cancel('tone-deadline');
    ctx.send(job.requester, 'inform', draft(job, m.body.trim() || 'formal'), { in_reply_to: job.requestId });
    delete ctx.state.job;
  }
});
