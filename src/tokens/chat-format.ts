import type { ChatMessage, Tokenizer } from '../contracts/types.js';
import { messageText } from '../common/messages.js';

/**
 * How a request is counted: OpenAI's `num_tokens_from_messages` (the cookbook's "How to count tokens with
 * tiktoken", for its chat models). Each message costs `TOKENS_PER_MESSAGE` for its markup plus the tokens of every
 * value it carries — its role (`user` is a token of its own), its text, its name, a tool message's call id — and a
 * name costs `TOKENS_PER_NAME` more; a request costs `TOKENS_PER_REQUEST` more to prime the reply. Other
 * providers' formats add as much or less, so these are upper bounds for them.
 */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
/** Tokens the format adds once per request to prime the reply. */
export const TOKENS_PER_REQUEST = 3;

/** Tokens of a message's text (content and tool calls), without its markup, role or name. */
export function textTokens(tokenizer: Tokenizer, message: ChatMessage): number {
  return tokenizer.count(messageText(message));
}

/**
 * Tokens a message costs in a request: its text's tokens (`textTokenCount`, often cached) plus the markup and the
 * tokens of its role, name and tool call id, counted with `tokenizer`.
 */
export function messageTokens(tokenizer: Tokenizer, message: Pick<ChatMessage, 'role' | 'name' | 'toolCallId'>, textTokenCount: number): number {
  return textTokenCount + TOKENS_PER_MESSAGE + tokenizer.count(message.role)
    + (message.name ? tokenizer.count(message.name) + TOKENS_PER_NAME : 0)
    + (message.toolCallId ? tokenizer.count(message.toolCallId) : 0);
}

/**
 * Tokens a system-prompt block costs, counted as a system message of its own (an upper bound once merged into
 * the caller's system prompt).
 */
export function blockTokens(tokenizer: Tokenizer, text: string): number {
  return text.length === 0 ? 0 : messageTokens(tokenizer, { role: 'system' }, tokenizer.count(text));
}

/** The key token counts are cached under in storage, or null when they must not be cached. */
export function countCacheKey(tokenizer: Tokenizer): string | null {
  return tokenizer.cacheKey ?? (tokenizer.exact ? tokenizer.encoding : null);
}
