/**
 * pagewise/ai-sdk: memory as Vercel AI SDK middleware (wrapLanguageModel). Types only from `ai` (an optional peer).
 *
 * @module pagewise/ai-sdk
 */
import type { LanguageModelV4CallOptions, LanguageModelV4Middleware, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { Memory } from './engine/engine.js';
import { PagewiseError } from './contracts/errors.js';
import { contentText } from './common/messages.js';
import { type PromptMessage, ReplyReader, generatedReply, toPagewise, toPrompt } from './surfaces/ai-sdk-prompt.js';
import type { AssembledContext, ChatMessage } from './contracts/types.js';

/** Options of `memoryMiddleware`. */
export interface MemoryMiddlewareOptions {
  /** Any Memory: `createMemory()`, `connect()`, or a Durable Object's `memoryStub()`. */
  memory: Memory;
  /** The conversation; a function reads it from each call's options (e.g. a header you put in providerOptions). */
  conversationId: string | ((params: LanguageModelV4CallOptions) => string);
  /** Send the images of recalled turns again (`InboundInput.recallAttachments`): in one user message before the new one. */
  recallAttachments?: boolean | number;
  /** Show recalled turns' reasoning in the recall block (`InboundInput.recallReasoning`). */
  recallReasoning?: boolean;
}

/** A transformed call's new message and the prompt messages after it (a tool loop's steps), for storing with the reply. */
interface Asked {
  conversationId: string;
  messages: ChatMessage[];
}

/** The request as sent, around memory's system message: the leading system messages, and the history kept after it. */
interface Kept {
  head: PromptMessage[];
  body: PromptMessage[];
}

/**
 * The caller's history as kept: prompt message j is sent, as the caller's own object, when every pagewise message it
 * became was kept (`{ kind: 'history', index }`); one that became none goes with the next one that did.
 */
function keptHistory(before: PromptMessage[], converted: ChatMessage[][], ctx: AssembledContext): Kept {
  const kept = new Set(ctx.sources.flatMap((s) => (s.kind === 'history' ? [s.index] : [])));
  let next = 0;
  const keep: (boolean | null)[] = before.map((_, j) => {
    const from = next;
    next += converted[j]!.length;
    return next === from ? null : Array.from({ length: next - from }, (_, i) => from + i).every((i) => kept.has(i));
  });
  for (let j = keep.length - 1, after = true; j >= 0; j--) after = keep[j] ??= after;
  const lead = before.findIndex((m) => m.role !== 'system');
  const at = lead < 0 ? before.length : lead;
  return { head: before.slice(0, at).filter((_, j) => keep[j]), body: before.slice(at).filter((_, j) => keep[at + j]) };
}

/**
 * The history from memory (the caller sent only system messages before the new one): stored turns written back as
 * prompt messages (the engine leaves out a stored copy of this round: a tool loop's earlier step).
 */
function storedHistory(before: PromptMessage[], ctx: AssembledContext, toolNames: Map<string, string>): Kept {
  const sent = ctx.messages.filter((_, i) => ctx.sources[i]?.kind === 'stored');
  for (const m of sent) for (const c of m.toolCalls ?? []) toolNames.set(c.id, c.function.name);
  const lead = sent.findIndex((m) => m.role !== 'system');
  const at = lead < 0 ? sent.length : lead;
  return { head: [...before, ...sent.slice(0, at).map((m) => toPrompt(m, toolNames))], body: sent.slice(at).map((m) => toPrompt(m, toolNames)) };
}

/** Memory's one system message: the stable part (`prependText`) and the recall block, joined by a blank line. */
function memoryText(ctx: AssembledContext): string {
  const recall = ctx.messages.filter((m, i) => ctx.sources[i]?.kind === 'memory' && m.role === 'system').map((m) => contentText(m.content));
  return [ctx.prependText, ...recall].filter((t) => t.trim() !== '').join('\n\n');
}

/**
 * Memory for `wrapLanguageModel` (AI SDK 7, middleware v4). Before each call the last user message is looked up in
 * memory, and the prompt is passed on as the caller wrote it — every kept message the caller's own object, parts,
 * provider options, file data and reasoning signatures untouched — changed only by what memory adds and trims: one
 * system message after the app's system prompt (the `<context-topics>` hint and what was recalled), the images of
 * recalled turns before the new message when `recallAttachments` asks, and the oldest history messages left out when
 * they do not fit. After the reply, the exchange is stored, reasoning as reasoning — before `generateText` resolves,
 * and before a stream's last chunk is read (the stream's parts pass untouched). An app may send only the new message:
 * the conversation comes from memory.
 *
 * @example
 * const model = wrapLanguageModel({ model: openai('gpt-4.1'), middleware: memoryMiddleware({ memory, conversationId: 'c1' }) });
 * const { text } = await generateText({ model, prompt: 'What did we decide about the database?' });
 */
export function memoryMiddleware(options: MemoryMiddlewareOptions): LanguageModelV4Middleware {
  const { memory } = options;
  if (typeof memory?.onMessageInbound !== 'function') throw new PagewiseError('INVALID_OPTIONS', 'ai-sdk', 'memoryMiddleware needs { memory } (from createMemory(), connect() or memoryStub()).');
  // The new message of each transformed call, for storing once the reply is complete.
  const asked = new WeakMap<LanguageModelV4CallOptions, Asked>();
  const idOf = (params: LanguageModelV4CallOptions) => (typeof options.conversationId === 'function' ? options.conversationId(params) : options.conversationId);
  const recall = {
    ...(options.recallAttachments !== undefined ? { recallAttachments: options.recallAttachments } : {}),
    ...(options.recallReasoning !== undefined ? { recallReasoning: options.recallReasoning } : {}),
  };

  const store = async (params: LanguageModelV4CallOptions, reply: ChatMessage | null) => {
    const q = asked.get(params);
    if (!q || !reply) return;
    await memory.onTurnComplete({ conversationId: q.conversationId, messages: [...q.messages, reply] });
  };

  return {
    specificationVersion: 'v4',

    async transformParams({ params, model }) {
      const { prompt } = params;
      const converted = prompt.map(toPagewise);
      const last = prompt.map((m) => m.role).lastIndexOf('user');
      const message = converted[last]?.[0];
      // No user message, or one with nothing pagewise can read (only provider references): sent as it is.
      if (!message) return params;
      const conversationId = idOf(params);
      const before = prompt.slice(0, last);
      const after = converted.slice(last + 1).flat();
      // Only a system prompt before the new message: the history comes from memory (the app sends only the new one).
      const fromMemory = before.every((m) => m.role === 'system');
      const ctx = await memory.onMessageInbound({
        // The prompt is the conversation as the app holds it: an edited message or a regenerated reply moves memory to that branch.
        conversationId, message, rewriteHistory: false, wholeHistory: true, ...recall, ...(after.length > 0 ? { after } : {}),
        ...(fromMemory ? {} : { history: converted.slice(0, last).flat() }),
        ...(model.provider.includes('anthropic') ? { mediaTokens: 'anthropic' as const } : {}),
      });
      const toolNames = new Map(prompt.flatMap((m) => (m.role === 'assistant' ? m.content.flatMap((p) => (p.type === 'tool-call' ? [[p.toolCallId, p.toolName] as const] : [])) : [])));
      const { head, body } = fromMemory ? storedHistory(before, ctx, toolNames) : keptHistory(before, converted.slice(0, last), ctx);
      const added = memoryText(ctx);
      const images = ctx.messages.filter((m, i) => ctx.sources[i]?.kind === 'memory' && m.role === 'user').map((m) => toPrompt(m, toolNames));
      const next = {
        ...params,
        prompt: [...head, ...(added ? [{ role: 'system' as const, content: added }] : []), ...body, ...images, ...prompt.slice(last)],
      };
      asked.set(next, { conversationId, messages: [message, ...after] });
      return next;
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      await store(params, generatedReply(result.content));
      return result;
    },

    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      const reply = new ReplyReader();
      const collect = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        transform(part, controller) {
          reply.part(part);
          controller.enqueue(part);
        },
        // The stream ends once the exchange is stored: a caller that read it to the end finds it in memory.
        async flush() {
          await store(params, reply.message());
        },
      });
      return { ...rest, stream: stream.pipeThrough(collect) };
    },
  };
}
