/**
 * The contract file: messages, the two hooks' inputs and results; the tokenizer seam and the options are in
 * types-options.ts, the storage driver seam in types-storage.ts, the tagging and LLM seams in seams.ts, compaction's
 * shapes in types-compaction.ts and the embedder seam in types-embed.ts (all re-exported). The data-control, tag and
 * cost shapes are in types-data.ts.
 * Logic files import these types; nothing here has behaviour.
 */

import type { CompactionReport } from './types-compaction.js';
import type { MediaRule } from './types-options.js';

export type * from './seams.js';
export type * from './types-compaction.js';
export type * from './types-embed.js';
export type * from './types-storage.js';
export type * from './types-options.js';

// ---------------------------------------------------------------------------------------------
// Messages (the OpenAI chat shape)
// ---------------------------------------------------------------------------------------------

/** Who wrote a message. `tool` messages answer an assistant's tool call and need `toolCallId`. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A text part of a multi-part message. */
export interface TextContentPart {
  type: 'text';
  text: string;
}

/** An attachment's bytes as a caller may give them: base64, a `data:` URL, or the bytes themselves. */
export type AttachmentData = string | Uint8Array | ArrayBuffer;

/**
 * What image, file and audio parts share. A part carries its bytes (`data`), a URL the provider fetches (`url`), or a
 * stored attachment's id (`attachment`). Bytes are stored once per content hash, beside the turns (deduplicated,
 * exported, synced, removed by forget), and come back as `attachment` and `size`: `memory.attachment()` reads them.
 */
export interface AttachmentFields {
  /**
   * The bytes: base64, a `data:` URL, a Uint8Array or an ArrayBuffer. Stored turns sent again (`ctx.messages`) carry
   * them as base64; the caller's own messages keep what the caller gave.
   */
  data?: AttachmentData;
  /** A URL the provider fetches (`https:`, `http:`): kept as it is, no bytes stored. */
  url?: string;
  /** A stored attachment's id (the SHA-256 of its bytes, hex): set by pagewise; pass it back instead of the bytes. */
  attachment?: string;
  /** IANA media type (`image/png`, `application/pdf`, `audio/wav`); read from a `data:` URL or the bytes when absent. */
  mediaType?: string;
  /** A file name, shown where the attachment is recalled. */
  name?: string;
  /**
   * What the attachment says in words, as the caller supplies it: alt text or a caption, a document's extracted text,
   * a transcript. Searchable like any turn's text, and shown where the attachment is recalled.
   */
  caption?: string;
  /** Its size in bytes: set by pagewise. */
  size?: number;
}

/** An image (OpenAI `image_url`, Anthropic `image`, the AI SDK's image `file` part). */
export interface ImageContentPart extends AttachmentFields {
  type: 'image';
  /** OpenAI's detail level; `low` costs 85 tokens whatever the size. */
  detail?: 'auto' | 'low' | 'high';
  /** Pixels, read from the bytes when pagewise has them (they decide what the image costs in tokens). */
  width?: number;
  height?: number;
}

/** A document or any other file (a PDF: OpenAI `file`, Anthropic `document`). */
export interface FileContentPart extends AttachmentFields {
  type: 'file';
  /** A PDF's pages, read from the bytes. */
  pages?: number;
}

/** Audio (OpenAI `input_audio`). */
export interface AudioContentPart extends AttachmentFields {
  type: 'audio';
  /** Its length, read from a WAV's header. */
  durationMs?: number;
}

/**
 * A model's reasoning (Anthropic `thinking` with its signature, or `redacted_thinking`; the AI SDK's `reasoning`):
 * kept apart from the reply's text, never searched or recalled as what was said (unless `recallReasoning` asks), and
 * given back unchanged for the providers that require it in a tool loop.
 */
export interface ReasoningContentPart {
  type: 'reasoning';
  /** The reasoning text ('' when only encrypted). */
  text: string;
  /** The provider's signature over it (Anthropic requires it back unchanged). */
  signature?: string;
  /** Reasoning the provider gave encrypted (Anthropic `redacted_thinking`'s `data`). */
  encrypted?: string;
}

/** A part that holds an attachment: an image, a file or audio. */
export type AttachmentPart = ImageContentPart | FileContentPart | AudioContentPart;

/** One part of a message's content. */
export type ContentPart = TextContentPart | AttachmentPart | ReasoningContentPart;

/** A tool call made by an assistant, in the OpenAI function-calling shape. */
export interface ToolCall {
  /** The call's id; the `tool` message that answers it carries the same id as `toolCallId`. */
  id: string;
  type: 'function';
  function: {
    /** The function's name. */
    name: string;
    /** The arguments, as the model wrote them (a JSON string). */
    arguments: string;
  };
}

/** A chat message as the caller sends it to (or receives it from) the LLM. */
export interface ChatMessage {
  /** The caller's own id. When given, it identifies the message for reconciliation and in the manifest. */
  id?: string;
  role: Role;
  /**
   * The text, or a list of parts: text, images, files, audio, reasoning. May be empty only for an assistant message
   * that makes tool calls.
   */
  content: string | ContentPart[] | null;
  /** The speaker (group chats, transcripts). Searchable: "what did Caroline say" favours Caroline's turns. */
  name?: string;
  /** When the message was written, ISO 8601. Without it the engine stamps the time of storage. */
  createdAt?: string;
  /** Tool calls made by an assistant message. */
  toolCalls?: ToolCall[];
  /** For `tool` messages: the id of the call this message answers. */
  toolCallId?: string;
  /**
   * Private: stored and recalled verbatim, but never sent to an LLM tagger or summarizer and never quoted in a
   * summary (a summary of its stretch says a private message was left out).
   */
  private?: boolean;
}

/** A message as stored: verbatim, append-only, with the engine's bookkeeping. */
export interface StoredTurn {
  /** The caller's id when it gave one, else an id the engine made (`pw_…`). Unique within a conversation. */
  id: string;
  conversationId: string;
  /** Position in the conversation, from 0; gap-free unless messages were forgotten. */
  seq: number;
  role: Role;
  name?: string;
  /** As stored: attachments by their `attachment` id and `size`, without their bytes (`memory.attachment()`). */
  content: string | ContentPart[] | null;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** ISO 8601 in UTC: the caller's `createdAt`, or the time of storage. */
  createdAt: string;
  /** Stored as private (see ChatMessage.private). */
  private?: true;
  /**
   * The searchable text derived from the content: text parts joined, each attachment as a reference line (its kind,
   * name, type, size and caption), tool calls written out. Reasoning is left out.
   */
  text: string;
  /** SHA-256 of the message's role, name, content and tool fields: the reconciliation key without an id. */
  contentHash: string;
}

// ---------------------------------------------------------------------------------------------
// The two hooks
// ---------------------------------------------------------------------------------------------

/** Input of `onMessageInbound`, called before the LLM request. */
export interface InboundInput {
  /** Which conversation the message belongs to. A conversation with nothing stored yet is fine. */
  conversationId: string;
  /** The new message (usually the user's). It is not stored here: pass it to `onTurnComplete` afterwards. */
  message: ChatMessage;
  /**
   * The caller's view of the conversation so far, without the new message. When absent the stored turns are used.
   * Leading `system` messages are the prefix and are always kept.
   */
  history?: ChatMessage[];
  /** The time of the request (Date, ISO 8601 or epoch ms); resolves relative time expressions. Default: now. */
  now?: Date | string | number;
  /**
   * Messages after the new one in this request: a tool loop's calls and results so far. They are sent whole after it,
   * counted in the budget and never dropped or rewritten; recall still searches with `message`. A stored copy of the
   * new message or of these (an earlier step stored them) is not sent twice when the history comes from memory.
   */
  after?: ChatMessage[];
  /**
   * `false`: history messages are sent as given or left out, never rewritten (no compressed tool runs, offloading or
   * shortened tool results) — for wrappers that must pass a request through unchanged, such as the proxy and the AI
   * SDK middleware. Default true.
   */
  rewriteHistory?: boolean;
  /** Whose documented rule counts images, files and audio for this request. Default: the `mediaTokens` option. */
  mediaTokens?: MediaRule;
  /**
   * Send the images of recalled turns again, not only their reference: in one message just before the new one,
   * counted by the provider's image rule within the memory budget. `true` allows 4 images; a number sets how many.
   * Default false.
   */
  recallAttachments?: boolean | number;
  /** Show recalled turns' reasoning (kept apart from their text) in the recall block. Default false. */
  recallReasoning?: boolean;
}

/** Where one message of an assembled context came from (`AssembledContext.sources`). */
export type MessageSource =
  /** `history[index]` of the caller's input (`rewritten`: sent compressed; the manifest's `compressed` says how). */
  | { kind: 'history'; index: number; rewritten?: true }
  /** A stored turn (the history came from memory). */
  | { kind: 'stored'; id: string; rewritten?: true }
  /** The new message. */
  | { kind: 'message' }
  /** `after[index]` of the caller's input (this round's tool calls and results). */
  | { kind: 'after'; index: number }
  /** pagewise's own: the recall block, recalled attachments. */
  | { kind: 'memory' };

/** Input of `onTurnComplete`, called after the LLM responded. */
export interface TurnInput {
  conversationId: string;
  /**
   * The whole history or only its tail (the last few messages). The engine stores only what is new and never
   * stores a message twice: re-sending the same tail is a no-op.
   */
  messages: ChatMessage[];
}

/** What `onTurnComplete` did. */
export interface TurnReport {
  conversationId: string;
  /** How many messages were new and stored. */
  stored: number;
  /** How many were already stored and skipped. */
  skipped: number;
  /** The ids of the stored messages, in order. */
  storedIds: string[];
  /** How many turns the conversation holds now. */
  totalTurns: number;
  /**
   * The compaction that ran before returning (the hard threshold was crossed), or null. Above the soft threshold
   * compaction runs in the background instead: `memory.flush()` waits for it and returns its report.
   */
  compaction: CompactionReport | null;
}

/** The token budget of one assembled request; every figure is counted with the configured tokenizer. */
export interface BudgetBreakdown {
  /** `contextWindow`. */
  window: number;
  /** `reserveTokens`: kept free for the reply. */
  reserve: number;
  /** `window − reserve`: what the request may use. */
  available: number;
  /** Leading system messages of the history. */
  prefix: number;
  /** What pagewise injected: `prependText` (one more system message) and the recall message, if any. */
  memory: number;
  /** Of `memory`, the `<context-topics>` hint. */
  topics: number;
  /** History messages other than the prefix and the new message. */
  history: number;
  /** The new message (and the messages `after` it). */
  message: number;
  /** Tokens the chat format adds once per request (reply priming). */
  overhead: number;
  /** `prefix + memory + history + message + overhead`; never above `available`. */
  total: number;
  /** `available − total`. */
  free: number;
  /**
   * Of `total`, tokens that are estimates: non-text parts whose provider rule needs facts pagewise lacks (an image
   * by URL, a PDF, audio). 0 when everything was counted by a documented rule.
   */
  estimated: number;
  /** The encoding counted with. */
  encoding: string;
  /** False when the model is unknown and counts are an estimate with a safety margin. */
  exact: boolean;
}

/** What a manifest entry is. */
/** `attachments`: images of recalled turns sent again (`recallAttachments`). */
export type BlockKind = 'prefix' | 'topics' | 'recent' | 'history' | 'recall' | 'summary' | 'message' | 'attachments';

/** How a block scored; each part that ranked it. */
export interface ScoreParts {
  /** Tag overlap: Σ IDF of the matched tags, related-tag matches at half weight. */
  tagIdf?: number;
  /** FTS5 BM25 relevance (higher is better; SQLite's sign flipped). */
  bm25?: number;
  /** The block's speaker was named in the question. */
  speaker?: boolean;
  /** The block lies in the time window the question refers to (or at the position it names). */
  time?: boolean;
  /** Cosine similarity of the block's best hit to the question (embedding search), when above the threshold. */
  vector?: number;
  /** Reciprocal rank fusion of the ranked lists above (Σ 1/(60 + rank)). */
  fusion?: number;
  /** Recency factor applied to the fused score (1 = newest). */
  recency?: number;
  /** Priority from the tag rules. */
  priority?: number;
  /** 1-based rank after fusion. */
  rank?: number;
  /** Whether the block was the hit itself or was brought in as its neighbour. */
  neighbour?: boolean;
}

/** One block of the assembled context. */
export interface ManifestEntry {
  kind: BlockKind;
  /** Where the block went: into `prependText` or into `messages` (recall placed as a message counts as messages). */
  placement: 'prependText' | 'messages';
  /** The ids of the stored messages it came from (caller ids when given). Empty for unstored history. */
  sourceIds: string[];
  tokens: number;
  scores: ScoreParts;
  /** The block's tags (for recalled blocks: its own tags; matched ones first). */
  tags?: string[];
  /** Recalled turns quoted in part (long turns are cut to the passages about the question). */
  partialIds?: string[];
  /** For summaries: which one (expand it with the `pagewise_expand` tool), its level and the turns it covers. */
  summaryId?: string;
  level?: number;
  covers?: { fromSeq: number; toSeq: number };
  /** History messages sent in a compressed form, by id: how (seed 001/002: tool runs, offloading, progressive levels). */
  compressed?: Record<string, CompressionKind>;
  /** Of `tokens`, what is an estimate (non-text parts without the facts their rule needs). */
  estimatedTokens?: number;
  /** Why it was included, in words. */
  reason: string;
}

/** How a history message was compressed for sending (the stored turn is unchanged). */
export type CompressionKind = 'tool-run' | 'offloaded' | 'whitespace' | 'format' | 'selective' | 'truncated';

/** A candidate that was considered and left out. */
export interface DroppedEntry {
  kind: BlockKind;
  sourceIds: string[];
  /** For long runs of dropped history: the first and last id and how many. */
  range?: { fromId: string; toId: string; count: number };
  tokens: number;
  scores: ScoreParts;
  reason: 'budget' | 'duplicate' | 'orphaned-tool-result' | 'unrelated' | 'expired';
}

/** What `onMessageInbound` returns: the context to send, and why it is what it is. */
export interface AssembledContext {
  conversationId: string;
  /**
   * For the system prompt, before your own: the stable part of memory (the `<context-topics>` hint, and recalled
   * excerpts when `recallPlacement` is `prependText`). Empty when there is none. Send it as the first system message.
   */
  prependText: string;
  /**
   * The messages to send after `prependText`: the system prefix, recent history, the recalled excerpts as one
   * system message (delimited, labelled as prior conversation, never instructions) and the new message, last.
   */
  messages: ChatMessage[];
  /**
   * Where each message of `messages` came from, in the same order: the caller's history (by index), a stored turn, the
   * new message, or memory. A wrapper uses it to send the caller's own message objects unchanged.
   */
  sources: MessageSource[];
  /** The recalled excerpts block as placed (in `messages` or in `prependText`), '' when nothing was recalled. */
  recallText: string;
  budget: BudgetBreakdown;
  manifest: ManifestEntry[];
  dropped: DroppedEntry[];
  /** Tags of the message (and its related tags) that matched stored tags, canonical. */
  matchedTags: string[];
  /** Whether the message asks about everything ("what did we discuss?"). */
  broad: boolean;
  /** Whether the message refers to a position in time ("at the beginning"). */
  temporal: boolean;
  /**
   * Why a retrieval signal was missing, e.g. the embedder failed to load (retrieval then uses tags + BM25), or how
   * many stored turns were not embedded yet. Absent when all went as configured.
   */
  notes?: string[];
}

/** A conversation as listed by `memory.conversations()`. */
export interface ConversationInfo {
  id: string;
  /** Turns stored now (forgotten ones are not counted). */
  turns: number;
  createdAt: string;
  updatedAt: string;
}
