import type { ChatMessage } from '../session/types.ts';
import type { BrainInput, BrainTurn } from './types.ts';

/** A tool a prompt-driven brain can use (e.g. get_memory once memory exists). */
export interface ToolDescription {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** How a command-line agent calls it (a shell command), when it cannot call functions. */
  usage?: string;
}

/** The text a brain sees for one input. */
export function describeInput(input: BrainInput): string {
  if (input.kind === 'timer') return `Timer "${input.timer.name}" fired. Payload: ${JSON.stringify(input.timer.payload)}`;
  const m = input.message;
  const flags = [m.act, m.requires_reply ? 'expects a reply' : '', m.needs_human ? 'from the people in the loop' : ''].filter(Boolean).join(', ');
  return `Message ${m.id} from ${m.from} (${flags})${m.subject ? ` — subject: ${m.subject}` : ''}\n${m.body}`;
}

const ANSWER_FORMAT = [
  'Answer with plain text: it is sent back to the sender as your reply.',
  'To send other messages, answer with JSON instead:',
  '{"reply": "text for the sender (optional)", "messages": [{"to": "agent id, god or broadcast", "act": "request|inform|propose|query|agree|refuse|done", "subject": "optional", "body": "text", "needs_human": false}]}',
].join('\n');

export interface Prompt {
  system: string;
  /** History plus the new input, as chat messages (for chat-completion APIs). */
  messages: ChatMessage[];
  /** Everything as one text (for command-line brains). */
  text: string;
}

/** Builds the prompt: identity, tools, briefing, restored history, the new input. */
export function buildPrompt(turn: BrainTurn, identity: string, tools: ToolDescription[] = []): Prompt {
  const conversation = turn.conversation;
  const toolText = tools.length
    ? `\n\n# Tools\n${tools.map((t) => `- ${t.name}: ${t.description}\n  parameters: ${JSON.stringify(t.parameters)}${t.usage ? `\n  call it: ${t.usage}` : ''}`).join('\n')}`
    : '';
  const background = conversation?.background.length ? `\n\n# Background\n${conversation.background.join('\n\n')}` : '';
  const system = `${identity.trim()}${toolText}${background}\n\n# How to answer\n${ANSWER_FORMAT}`;
  const input = describeInput(turn.input);
  const history = conversation?.history ?? [];
  const messages: ChatMessage[] = [...history, { role: 'user', content: input }];
  const historyText = history.length ? `\n\n# Conversation so far\n${history.map((h) => `${h.role}: ${h.content}`).join('\n')}` : '';
  return { system, messages, text: `${system}${historyText}\n\n# New message\n${input}\n` };
}
