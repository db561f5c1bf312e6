// The demo's writer, an agent written as an XState machine (brain kind "machine"): a brief
// arrives (ready → drafting), it asks the people which tone to use (an ASK ME card for god)
// and waits in awaitingTone; god's answer, or after 20 s the default, finishes the draft
// (→ done) and withdraws the question when nobody answered. The inspector draws this
// machine on the writer's card; the `after` delay is durable like everything else.
import { assign, setup } from 'xstate';
import { hiveAsk, hiveSend, hiveWithdraw, type HiveMachineEvent, type HiveMessage } from 'hive-runtime/machine';

const WAIT_MS = Number(process.env.HIVE_DEMO_WAIT_MS ?? 20_000);

interface Job {
  requestId: string;
  requester: string;
  brief: string;
  conversation: string;
}

function draft(job: Job, tone: string): string {
  return `(${tone}) Announcing: ${job.brief.replace(/^Draft a short announcement for:\s*/i, '')}`;
}

const jobOf = (m: HiveMessage): Job => ({ requestId: m.id, requester: m.from, brief: m.body, conversation: m.conversation });

export default setup({
  types: { context: {} as { job: Job | null }, events: {} as HiveMachineEvent },
  delays: { toneDeadline: () => WAIT_MS },
}).createMachine({
  id: 'writer',
  initial: 'ready',
  context: { job: null },
  states: {
    ready: { on: { 'hive.request': { target: 'drafting', actions: assign({ job: ({ event }) => jobOf(event.message) }) } } },
    drafting: {
      entry: hiveAsk('Which tone should the announcement take: formal or playful?', { subject: 'Tone?' }),
      always: 'awaitingTone',
    },
    awaitingTone: {
      on: {
        'hive.answer': {
          target: 'done',
          actions: hiveSend(({ context }) => context.job!.requester, ({ context, event }) => draft(context.job!, event.message!.body.trim() || 'formal'), ({ context }) => ({ in_reply_to: context.job!.requestId, conversation: context.job!.conversation })),
        },
      },
      after: {
        toneDeadline: {
          target: 'done',
          actions: [
            hiveSend(({ context }) => context.job!.requester, ({ context }) => draft(context.job!, 'formal, the default: nobody answered in time'), ({ context }) => ({ in_reply_to: context.job!.requestId, conversation: context.job!.conversation })),
            // The card for the people goes away: an answer now would change nothing.
            hiveWithdraw({ conversation: ({ context }) => context.job!.conversation, reason: 'nobody answered in time; the writer took the default (formal)' }),
          ],
        },
      },
    },
    done: { on: { 'hive.request': { target: 'drafting', actions: assign({ job: ({ event }) => jobOf(event.message) }) } } },
  },
});
