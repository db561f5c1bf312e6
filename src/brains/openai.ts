import path from 'node:path';
import { HiveError } from '../errors.ts';
import { readRegularFile } from '../fs/regular-file.ts';
import type { BrainSpec } from '../config/schema.ts';
import type { ChatMessage } from '../session/types.ts';
import { buildPrompt, type ToolDescription } from './prompt.ts';
import { parseBrainAnswer } from './reply.ts';
import type { Brain, BrainOutput, BrainTurn } from './types.ts';

type OpenAISpec = Extract<BrainSpec, { kind: 'openai' }>;

const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * The `openai` provider: any OpenAI-compatible chat-completions endpoint (llama.cpp
 * server, Ollama, vLLM, hosted APIs). The restored history is sent as messages; the API
 * key comes from the environment variable named in config (never from the config file).
 * @example createOpenAIBrain({ kind: 'openai', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3' }, env)
 */
export function createOpenAIBrain(
  spec: OpenAISpec,
  env: { agentDir: string; agentName: string; tools?: ToolDescription[]; runTool?: (name: string, args: unknown) => Promise<unknown> },
): Brain {
  const inflight = new Set<AbortController>();
  const url = `${spec.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const name = `Endpoint ${url} (model ${spec.model})`;

  /** Chat messages as the API takes them (tool calls and results included). */
  type ApiMessage = ChatMessage | { role: 'assistant'; content: string | null; tool_calls: ToolCall[] } | { role: 'tool'; tool_call_id: string; content: string };
  interface ToolCall {
    id: string;
    type: 'function';
    function: { name: string; arguments: string };
  }
  let toolsSupported = true;

  async function complete(messages: ApiMessage[], withTools = false): Promise<{ content: string; toolCalls: ToolCall[]; ms: number; usage: unknown }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (spec.apiKeyEnv) {
      const key = process.env[spec.apiKeyEnv];
      if (!key) throw new HiveError('E_BRAIN', `${name}: environment variable ${spec.apiKeyEnv} (brain.apiKeyEnv) is not set`);
      headers.authorization = `Bearer ${key}`;
    }
    const controller = new AbortController();
    inflight.add(controller);
    const timeoutMs = spec.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(timeoutMs)]);
    const started = performance.now();
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: spec.model,
          messages,
          ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
          ...(withTools && env.tools?.length
            ? { tools: env.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
            : {}),
        }),
        signal,
      });
      const body = await res.text();
      if (!res.ok && withTools && res.status === 400 && /tool/i.test(body)) {
        toolsSupported = false; // an endpoint without function calling: ask again without tools
        return complete(messages, false);
      }
      if (!res.ok) throw new HiveError('E_BRAIN', `${name} answered HTTP ${res.status}: ${body.slice(0, 300)}`);
      let data: { choices?: { message?: { content?: unknown; tool_calls?: ToolCall[] } }[]; usage?: unknown };
      try {
        data = JSON.parse(body);
      } catch {
        throw new HiveError('E_BRAIN', `${name} answered unreadable JSON: ${body.slice(0, 120)}`);
      }
      const message = data.choices?.[0]?.message;
      const toolCalls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
      const content = message?.content;
      if (typeof content !== 'string' && toolCalls.length === 0) throw new HiveError('E_BRAIN', `${name} answered without choices[0].message.content`);
      return { content: typeof content === 'string' ? content : '', toolCalls, ms: performance.now() - started, usage: data.usage ?? null };
    } catch (err) {
      if (controller.signal.aborted) throw new HiveError('E_STOPPED', `${name}: request stopped`);
      if ((err as Error).name === 'TimeoutError') throw new HiveError('E_TIMEOUT', `${name} did not answer within ${timeoutMs} ms`);
      if ((err as { code?: string }).code?.startsWith('E_')) throw err;
      // No answer at all (refused, unresolvable, reset): the endpoint, not the message.
      throw new HiveError('E_UNAVAILABLE', `${name} could not be reached: ${(err as Error).message}${(err as { cause?: { code?: string } }).cause?.code ? ` (${(err as { cause: { code: string } }).cause.code})` : ''}`, { cause: err });
    } finally {
      inflight.delete(controller);
    }
  }

  const identity = () => {
    try {
      // Regular files only: a symlink here would send a file from outside the hive to the provider.
      return readRegularFile(path.join(env.agentDir, 'identity.md'), 'utf8');
    } catch {
      return `# ${env.agentName}`;
    }
  };

  return {
    kind: 'openai',
    conversational: true,
    async handle(turn: BrainTurn): Promise<BrainOutput> {
      // Tools go as functions (described in the system prompt only for endpoints without them).
      const prompt = buildPrompt(turn, identity(), []);
      const messages: ApiMessage[] = [{ role: 'system', content: prompt.system }, ...prompt.messages];
      const trace: BrainOutput['trace'] = [{ kind: 'request', url, model: spec.model, messages: messages.length }];
      let r = await complete(messages, toolsSupported && !!env.runTool);
      // Function calling: run what the model asked for (get_memory), answer, ask again.
      for (let round = 0; r.toolCalls.length > 0 && env.runTool && round < 3; round++) {
        messages.push({ role: 'assistant', content: r.content || null, tool_calls: r.toolCalls });
        for (const call of r.toolCalls) {
          let result: unknown;
          try {
            result = await env.runTool(call.function.name, JSON.parse(call.function.arguments || '{}'));
          } catch (err) {
            result = { error: (err as Error).message };
          }
          trace.push({ kind: 'tool', name: call.function.name, arguments: call.function.arguments, result });
          messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
        }
        r = await complete(messages, true);
      }
      const out = parseBrainAnswer(r.content, turn.input, 'text', name);
      out.trace = [...trace, { kind: 'response', ms: Math.round(r.ms), usage: r.usage, text: r.content.slice(0, 20_000) }];
      return out;
    },
    async summarize(text: string): Promise<string> {
      const r = await complete([
        { role: 'system', content: 'You write short, self-contained recaps of conversations: what was decided and learned.' },
        { role: 'user', content: text },
      ]);
      return r.content.trim();
    },
    async complete(prompt: string): Promise<string> {
      return (await complete([{ role: 'user', content: prompt }])).content;
    },
    async close() {
      for (const c of inflight) c.abort();
    },
  };
}
