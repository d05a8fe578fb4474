import type { ChatMessage, Tokenizer } from '../types.js';
import { messageText } from '../messages.js';

/**
 * Tokens the chat format adds around each message (role markup), as OpenAI documents for its chat models. A name
 * costs one more. These are upper bounds for other providers' formats, which add as much or less.
 */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
/** Tokens the format adds once per request to prime the reply. */
export const TOKENS_PER_REQUEST = 3;

/** Tokens of a message's text (content and tool calls), without the per-message markup. */
export function textTokens(tokenizer: Tokenizer, message: ChatMessage): number {
  return tokenizer.count(messageText(message));
}

/** Tokens a message costs in a request, markup included. */
export function messageTokens(textTokenCount: number, message: Pick<ChatMessage, 'name'>): number {
  return textTokenCount + TOKENS_PER_MESSAGE + (message.name ? TOKENS_PER_NAME : 0);
}

/** Tokens a system-prompt block costs, counted as a message of its own (an upper bound once merged). */
export function blockTokens(tokenizer: Tokenizer, text: string): number {
  return text.length === 0 ? 0 : tokenizer.count(text) + TOKENS_PER_MESSAGE;
}

/** The key token counts are cached under in storage, or null when they must not be cached. */
export function countCacheKey(tokenizer: Tokenizer): string | null {
  return tokenizer.cacheKey ?? (tokenizer.exact ? tokenizer.encoding : null);
}
