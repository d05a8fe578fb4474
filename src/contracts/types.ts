/**
 * The contract file: the two hooks' inputs and results (messages and their parts are in types-messages.ts, a
 * conversation's branches in types-branches.ts); the tokenizer seam and the options are in
 * types-options.ts, the storage driver seam in types-storage.ts, the tagging and LLM seams in seams.ts, compaction's
 * shapes in types-compaction.ts and the embedder seam in types-embed.ts (all re-exported). The data-control, tag and
 * cost shapes are in types-data.ts.
 * Logic files import these types; nothing here has behaviour.
 */

import type { CompactionReport } from './types-compaction.js';
import type { MediaRule } from './types-options.js';
import type { SearchReport } from './types-search.js';

export type * from './seams.js';
export type * from './types-compaction.js';
export type * from './types-embed.js';
export type * from './types-storage.js';
export type * from './types-options.js';
export type * from './types-search.js';
export type * from './types-stats.js';
export type * from './types-ops.js';

// ---------------------------------------------------------------------------------------------
// Messages (the OpenAI chat shape)
// ---------------------------------------------------------------------------------------------

/** Who wrote a message. `tool` messages answer an assistant's tool call and need `toolCallId`. */
export type * from './types-messages.js';
import type { ChatMessage } from './types-messages.js';

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
  /**
   * The stored message the new one follows (null: it starts the conversation over — an edit of the first message).
   * The conversation moves there first: recall reads the path to it, never the branch the user left.
   */
  parentId?: string | null;
  /**
   * `history` (or its absence) is the conversation as the app holds it, whole or trimmed at its start: where it
   * differs from the stored branch (an edited message, a regenerated reply), the conversation moves to the branch it
   * describes, forking it when that branch is new. Without a history, the message starts the conversation over when
   * the app has sent whole histories before (else memory supplies the conversation). The proxy and the AI SDK
   * middleware set it. Default false: `history` only replaces the stored turns in the request.
   */
  wholeHistory?: boolean;
  /**
   * `'all'`: recall also searches the conversation's other branches (their words: full-text search), each such excerpt
   * marked in the manifest. Default `'current'`: only the path to the head.
   */
  branches?: 'current' | 'all';
  /**
   * External search for this request (with the `search` option set): `true` searches whatever the trigger says (a
   * "search the web" button), `false` does not. Default: the trigger decides. A private message is never searched.
   */
  search?: boolean;
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
   * stores a message twice: re-sending the same tail is a no-op. A message whose id is stored says where the rest
   * goes: after it — on a new branch when something else followed it (a regenerated reply, an edit).
   */
  messages: ChatMessage[];
  /**
   * Where `messages` attach: the id of the stored message the first one follows, or null when they start the
   * conversation (a whole history, or an edit of its first message). Stored messages on the way are skipped; the rest
   * continue that branch, or fork a new one where something else followed. Left out: after the stored tail they
   * repeat, else after the head (the current branch).
   */
  parentId?: string | null;
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
  /** Of `memory`, the web results (`<web-results>`, the `search` option). */
  search: number;
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
/** `attachments`: images of recalled turns sent again (`recallAttachments`); `search`: a web result (the `search` option). */
export type BlockKind = 'prefix' | 'topics' | 'recent' | 'history' | 'recall' | 'summary' | 'message' | 'attachments' | 'search';

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
  /** Cosine similarity of the turn to the question (embeddings), whatever its value. */
  vector?: number;
  /** Not set since the learned ranking (kept for old manifests): reciprocal rank fusion of the lists above. */
  fusion?: number;
  /** Not set since the learned ranking (kept for old manifests): the recency factor applied to `fusion`. */
  recency?: number;
  /** Priority from the tag rules. */
  priority?: number;
  /** 1-based rank by the learned ranker (packing goes by probability per token, so rank 1 may be left out for budget). */
  rank?: number;
  /** The learned ranker's probability that this turn is what the question asks about (shares of 1 over its candidates). */
  score?: number;
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
  /** Recalled from a branch the conversation left (an edited message, a regenerated reply): only with `branches: 'all'`. */
  otherBranch?: true;
  /** For a web result (`search`): where it came from. */
  web?: { url: string; title: string; provider: string; publishedAt?: string };
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
  /** For a web result left out: where it came from. */
  web?: ManifestEntry['web'];
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
  /**
   * The memory block as placed (in `messages` or in `prependText`): web results first (`<web-results>`), then the
   * recalled excerpts and summaries (`<prior-conversation>`); '' when there is neither.
   */
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
  /**
   * The message the conversation is at (the new message follows it): history and recall came from the path to it —
   * the branch the user is on. null: the start.
   */
  head: string | null;
  /** With the `search` option: whether this request searched, why, the exact query sent, and what came back. */
  search?: SearchReport;
}

/** A conversation as listed by `memory.conversations()`. */
export interface ConversationInfo {
  id: string;
  /** Turns stored now (forgotten ones are not counted). */
  turns: number;
  createdAt: string;
  updatedAt: string;
}
