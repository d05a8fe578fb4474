// pagewise/ai-sdk: memory as Vercel AI SDK middleware (wrapLanguageModel). Types only from `ai` (an optional peer).
import type { LanguageModelV4CallOptions, LanguageModelV4Middleware, LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { Memory } from './engine/engine.js';
import { PagewiseError } from './contracts/errors.js';
import { contentText } from './common/messages.js';
import type { ChatMessage, ToolCall } from './contracts/types.js';

type Message = LanguageModelV4Prompt[number];

/** Options of `memoryMiddleware`. */
export interface MemoryMiddlewareOptions {
  /** Any Memory: `createMemory()`, `connect()`, or a Durable Object's `memoryStub()`. */
  memory: Memory;
  /** The conversation; a function reads it from each call's options (e.g. a header you put in providerOptions). */
  conversationId: string | ((params: LanguageModelV4CallOptions) => string);
}

const text = (parts: ReadonlyArray<{ type: string; text?: string; mediaType?: string }>): string =>
  parts.map((p) => (p.type === 'text' || p.type === 'reasoning' ? p.text ?? '' : p.type === 'file' ? `[file ${p.mediaType ?? ''}]` : '')).filter((t) => t !== '').join('\n');

const json = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** The SDK's prompt as pagewise messages (tool calls as tool calls, tool results as tool messages). */
function fromPrompt(prompt: LanguageModelV4Prompt): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of prompt) {
    if (m.role === 'system') out.push({ role: 'system', content: m.content });
    else if (m.role === 'user') out.push({ role: 'user', content: text(m.content) });
    else if (m.role === 'assistant') {
      const calls: ToolCall[] = m.content.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.toolCallId, type: 'function' as const, function: { name: p.toolName, arguments: json(p.input) } }] : []));
      out.push({ role: 'assistant', content: text(m.content as never), ...(calls.length > 0 ? { toolCalls: calls } : {}) });
    } else {
      for (const p of m.content) if (p.type === 'tool-result') out.push({ role: 'tool', toolCallId: p.toolCallId, content: json((p.output as { value?: unknown }).value ?? p.output) });
    }
  }
  return out;
}

/** A pagewise message as the SDK's prompt message. */
function toPrompt(m: ChatMessage): Message {
  const content = contentText(m.content);
  if (m.role === 'system') return { role: 'system', content };
  if (m.role === 'user') return { role: 'user', content: [{ type: 'text', text: content }] };
  if (m.role === 'tool') return { role: 'tool', content: [{ type: 'tool-result', toolCallId: m.toolCallId!, toolName: '', output: { type: 'text', value: content } }] };
  return { role: 'assistant', content: [
    ...(content ? [{ type: 'text' as const, text: content }] : []),
    ...(m.toolCalls ?? []).map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.function.name, input: c.function.arguments })),
  ] };
}

/**
 * Memory for `wrapLanguageModel` (AI SDK 7, middleware v4). Before each call the last user message is looked up in
 * memory and the prompt becomes pagewise's assembled context (the app's system prompt, the `<context-topics>` hint
 * when there is one, the history or what it recalled, the new message); after the reply, the exchange is stored —
 * before `generateText` resolves, and before a stream's last chunk is read (the stream's parts pass untouched).
 * An app may send only the new message: the conversation comes from memory.
 *
 * @example
 * const model = wrapLanguageModel({ model: openai('gpt-4.1'), middleware: memoryMiddleware({ memory, conversationId: 'c1' }) });
 * const { text } = await generateText({ model, prompt: 'What did we decide about the database?' });
 */
export function memoryMiddleware(options: MemoryMiddlewareOptions): LanguageModelV4Middleware {
  const { memory } = options;
  if (typeof memory?.onMessageInbound !== 'function') throw new PagewiseError('INVALID_OPTIONS', 'ai-sdk', 'memoryMiddleware needs { memory } (from createMemory(), connect() or memoryStub()).');
  // The new message of each transformed call, for storing once the reply is complete.
  const asked = new WeakMap<LanguageModelV4CallOptions, { conversationId: string; message: ChatMessage }>();
  const idOf = (params: LanguageModelV4CallOptions) => (typeof options.conversationId === 'function' ? options.conversationId(params) : options.conversationId);

  const store = async (params: LanguageModelV4CallOptions, reply: ChatMessage) => {
    const q = asked.get(params);
    if (!q) return;
    await memory.onTurnComplete({ conversationId: q.conversationId, messages: [q.message, reply] });
  };

  return {
    specificationVersion: 'v4',

    async transformParams({ params }) {
      const messages = fromPrompt(params.prompt);
      const last = messages.map((m) => m.role).lastIndexOf('user');
      if (last < 0) return params;
      const conversationId = idOf(params);
      const message = messages[last]!;
      const before = messages.slice(0, last);
      const system = before.filter((m) => m.role === 'system');
      // Only a system prompt before the new message: the history comes from memory (the app sends only the new one).
      const history = before.some((m) => m.role !== 'system') ? before : undefined;
      const ctx = await memory.onMessageInbound({ conversationId, message, ...(history ? { history } : {}) });
      const prompt: Message[] = [
        ...(history ? [] : system.map(toPrompt)),
        ...(ctx.prependText ? [{ role: 'system' as const, content: ctx.prependText }] : []),
        ...ctx.messages.map(toPrompt),
      ];
      const next = { ...params, prompt };
      asked.set(next, { conversationId, message });
      return next;
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const calls: ToolCall[] = result.content.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.toolCallId, type: 'function' as const, function: { name: p.toolName, arguments: json(p.input) } }] : []));
      const reply = text(result.content as never);
      if (reply.trim() !== '' || calls.length > 0) await store(params, { role: 'assistant', content: reply, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
      return result;
    },

    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      let reply = '';
      const calls: ToolCall[] = [];
      const collect = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        transform(part, controller) {
          if (part.type === 'text-delta') reply += part.delta;
          else if (part.type === 'tool-call') calls.push({ id: part.toolCallId, type: 'function', function: { name: part.toolName, arguments: json(part.input) } });
          controller.enqueue(part);
        },
        // The stream ends once the exchange is stored: a caller that read it to the end finds it in memory.
        async flush() {
          if (reply.trim() !== '' || calls.length > 0) await store(params, { role: 'assistant', content: reply, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
        },
      });
      return { ...rest, stream: stream.pipeThrough(collect) };
    },
  };
}
