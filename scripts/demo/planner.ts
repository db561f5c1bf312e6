// The demo's planner: splits a task into two pieces, hands them to the researcher and
// the writer, collects both reports and tells god the plan is done.
import { defineBrain } from 'hive-runtime/brain';

interface PlannerState {
  [key: string]: unknown;
  task?: { id: string; from: string; subject: string };
  pending?: Record<string, string>;
  reports?: Record<string, string>;
}

export default defineBrain((input, ctx) => {
  if (input.kind !== 'message') return;
  const m = input.message;
  const state = ctx.state as PlannerState;
  if (m.act === 'request' && !state.task) {
    state.task = { id: m.id, from: m.from, subject: m.subject || m.body.slice(0, 60) };
    state.pending = { researcher: 'research', writer: 'announcement' };
    state.reports = {};
    ctx.send('researcher', 'request', `Find the three things users asked for most, for: ${m.body}`, { subject: 'Research' });
    ctx.send('writer', 'request', `Draft a short announcement for: ${m.body}`, { subject: 'Announcement' });
    return;
  }
  if (m.act === 'inform' && state.pending && m.from in state.pending) {
    state.reports![m.from] = m.body;
    delete state.pending[m.from];
    if (Object.keys(state.pending).length === 0 && state.task) {
      const summary = Object.entries(state.reports!).map(([who, text]) => `- ${who}: ${text}`).join('\n');
      ctx.send(state.task.from, 'done', `Plan for "${state.task.subject}" is ready:\n${summary}`, {
        subject: `Done: ${state.task.subject}`,
        in_reply_to: state.task.id,
      });
    }
  }
});
