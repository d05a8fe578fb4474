// What a message costs as sent: its markup and text (chat-format.ts) and its attachments by the provider's rule
// (media.ts). Attachments never count as zero: without the facts a rule needs, the count is an estimate, and says so.
import { bytesOf, isAttachmentPart, partsOf, sentText } from '../common/parts.js';
import { probeMedia } from '../common/media-probe.js';
import { messageText } from '../common/messages.js';
import { type MediaPart, mediaTokens } from './media.js';
import { messageTokens } from './chat-format.js';
import type { AttachmentPart, ChatMessage, MediaRule, Tokenizer } from '../contracts/types.js';

/** A count, and how much of it is an estimate. */
export interface Cost {
  tokens: number;
  estimated: number;
}

/** The facts a rule needs, from the part or, where it carries its bytes and not them, from the bytes. */
function factsOf(part: AttachmentPart): MediaPart {
  const given = part.type === 'image' ? { width: part.width, height: part.height } : part.type === 'file' ? { pages: part.pages } : { durationMs: part.durationMs };
  const bytes = Object.values(given).every((v) => v === undefined) ? bytesOf(part) : null;
  const probed = bytes && part.mediaType ? probeMedia(bytes, part.mediaType) : {};
  const facts: MediaPart = { kind: part.type, ...probed, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
  if (part.mediaType !== undefined) facts.mediaType = part.mediaType;
  if (part.type === 'image' && part.detail !== undefined) facts.detail = part.detail;
  const size = part.size ?? bytes?.length;
  if (size !== undefined) facts.size = size;
  if (part.caption !== undefined) facts.caption = part.caption;
  return facts;
}

/** Tokens of a content's attachments by `rule` (0 for text alone). */
export function attachmentTokens(content: ChatMessage['content'], rule: MediaRule, tokenizer: Tokenizer): Cost {
  let tokens = 0;
  let estimated = 0;
  for (const part of partsOf(content)) {
    if (!isAttachmentPart(part)) continue;
    const c = mediaTokens(factsOf(part), rule, (t) => tokenizer.count(t));
    tokens += c.tokens;
    if (!c.exact) estimated += c.tokens;
  }
  return { tokens, estimated };
}

/**
 * The text a model reads of a message when it is sent: its text parts, reasoning and tool calls (attachments count
 * apart). For a message of text alone this is `messageText`, whose count the store caches.
 */
export function sentMessageText(m: Pick<ChatMessage, 'content' | 'toolCalls'>): string {
  if (typeof m.content === 'string' || !Array.isArray(m.content) || m.content.every((p) => p.type === 'text')) return messageText(m);
  return messageText({ content: sentText(m.content), ...(m.toolCalls ? { toolCalls: m.toolCalls } : {}) });
}

/** What a message costs in a request: markup, role, name, text (`textTokens` when counted already) and attachments. */
export function messageCost(tokenizer: Tokenizer, message: ChatMessage, rule: MediaRule, textTokens?: number): Cost {
  const media = attachmentTokens(message.content, rule, tokenizer);
  const text = textTokens ?? tokenizer.count(sentMessageText(message));
  return { tokens: messageTokens(tokenizer, message, text) + media.tokens, estimated: media.estimated };
}
