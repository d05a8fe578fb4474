import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { messageText } from '../../src/common/messages.js';
import { createMemory as create } from '../../src/index.js';
import type { AssembledContext, ChatMessage, MemoryOptions } from '../../src/contracts/types.js';

export { rng } from './rng.js';

/**
 * The engine without embeddings, for tests about budgets, storage, compaction and keyword retrieval (the default
 * embedder loads USE-Lite and embeds every stored turn). Retrieval tests with the real encoder: embeddings.test.ts.
 */
export const createMemory = (options: MemoryOptions = {}) => create({ embedder: false, ...options });

// An independent count, with the other tokenizer package, to check the engine's own accounting.
const reference = new Tiktoken(o200k);
export const refCount = (text: string): number => reference.encode(text, [], []).length;

/**
 * The request's tokens recounted from scratch, as OpenAI's cookbook counts them: per message 3 plus the tokens of
 * every value (role, text, name, tool call id) plus 1 for a name; the memory block as one more system message;
 * 3 to prime the reply.
 */
export function recount(ctx: AssembledContext): number {
  const values = (m: ChatMessage) => [m.role, messageText(m), m.name ?? '', m.toolCallId ?? ''].reduce((n, v) => n + refCount(v), 0);
  const messages = ctx.messages.reduce((n, m) => n + 3 + values(m) + (m.name ? 1 : 0), 0);
  const memory = ctx.prependText ? 3 + values({ role: 'system', content: ctx.prependText }) : 0;
  return messages + memory + 3;
}

export function user(content: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  return { role: 'user', content, ...extra };
}

export function assistant(content: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  return { role: 'assistant', content, ...extra };
}
