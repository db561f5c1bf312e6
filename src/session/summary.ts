/**
 * A built-in extractive summary, for snapshots when the agent has no provider to ask:
 * the opening request, then the sentences that carry the most of the conversation's
 * frequent words, in their original order, within a character budget.
 */

const STOP = new Set(
  'the a an and or but of to in on for with at by from is are was were be been it this that these those as i you we they he she not no do does did can will would should could have has had my your our their its me us them so if then than there here what which who how when where why all any some just also into about over after before up down out very'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9][a-z0-9'-]{2,}/g) ?? []).filter((w) => !STOP.has(w));
}

export function extractiveSummary(turns: { role: string; text: string }[], budget = 1_200): string {
  if (turns.length === 0) return '(empty conversation)';
  const freq = new Map<string, number>();
  for (const t of turns) for (const w of words(t.text)) freq.set(w, (freq.get(w) ?? 0) + 1);
  const sentences: { i: number; text: string; score: number }[] = [];
  turns.forEach((t, ti) => {
    for (const s of t.text.split(/(?<=[.!?])\s+|\n+/)) {
      const ws = words(s);
      if (ws.length < 3) continue;
      const score = ws.reduce((a, w) => a + (freq.get(w) ?? 0), 0) / Math.sqrt(ws.length);
      sentences.push({ i: ti * 1_000 + sentences.length, text: `${t.role}: ${s.trim()}`, score });
    }
  });
  const opening = `Started with: ${turns.find((t) => t.role === 'user')?.text.split('\n')[0]?.slice(0, 200) ?? turns[0]!.text.slice(0, 200)}`;
  const picked: typeof sentences = [];
  let used = opening.length;
  for (const s of [...sentences].sort((a, b) => b.score - a.score)) {
    if (used + s.text.length + 1 > budget) continue;
    picked.push(s);
    used += s.text.length + 1;
  }
  picked.sort((a, b) => a.i - b.i);
  return [opening, ...picked.map((s) => s.text)].join('\n');
}
