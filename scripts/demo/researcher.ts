// The demo's researcher: answers a research request with the topics it finds in the brief.
import { defineBrain } from 'hive-runtime/brain';

export default defineBrain((input, ctx) => {
  if (input.kind !== 'message' || input.message.act !== 'request') return;
  const brief = input.message.body.split(':').slice(-1)[0] ?? '';
  const topics = brief
    .split(/,|\band\b|\./)
    .map((t) => t.trim())
    .filter((t) => t.length > 3)
    .slice(0, 3);
  ctx.state.answered = Number(ctx.state.answered ?? 0) + 1;
  ctx.reply(`Users ask most for: ${topics.length ? topics.join('; ') : 'speed; stability; docs'}`);
});
