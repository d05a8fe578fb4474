/**
 * The tokenizer seam and the options of createMemory() (re-exported by types.ts).
 */

import type { LlmOptions, LlmProvider, Summarizer, TagRule, Tagger } from './seams.js';
import type { EmbedderOptions, EmbeddingProgress, ModelProgress } from './types-embed.js';
import type { StorageOption } from './types-storage.js';
import type { SearchOptions } from './types-search.js';
import type { RetentionOptions } from './types-ops.js';

// ---------------------------------------------------------------------------------------------
// Seam: tokenizer
// ---------------------------------------------------------------------------------------------

/** The encodings that ship with the tokenizer packages (no network needed). */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** Counts tokens the way the model will. */
export interface Tokenizer {
  /** Implementation name, e.g. `gpt-tokenizer` or `js-tiktoken`. */
  readonly name: string;
  readonly encoding: EncodingName;
  /** False for an estimate (unknown model): counts then include a safety margin. */
  readonly exact: boolean;
  /** Key under which counts are cached in storage. Default: the encoding when exact; estimates without one are not cached. */
  readonly cacheKey?: string;
  /** Tokens of `text`, special-token look-alikes counted as plain text. */
  count(text: string): number;
}

/** Whose documented rule counts non-text parts: OpenAI's image tiles, or Anthropic's width × height / 750. */
export type MediaRule = 'openai' | 'anthropic';

/** Which tokenizer implementation to use, or your own. */
export type TokenizerOption = 'gpt-tokenizer' | 'js-tiktoken' | Tokenizer;

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/** Options of `createMemory()` (and of `connect()`, minus what cannot cross a worker boundary). */
export interface MemoryOptions {
  /** The model's context window in tokens. Default 128,000. */
  contextWindow?: number;
  /** Tokens kept free for the reply. Default `min(4096, contextWindow / 4)`. */
  reserveTokens?: number;
  /**
   * Tokens of recalled excerpts at most. Default `min(4096, max(available / 4, targetTokens / 2))`, and then also what
   * `targetTokens` leaves unspent; set, it is a hard cap. Broad and temporal questions may use more.
   */
  memoryTokens?: number;
  /**
   * The model, to pick its encoding: gpt-4o, gpt-4.1, gpt-5, o1/o3/o4 → o200k_base; gpt-4, gpt-3.5 → cl100k_base;
   * anything else → an o200k_base estimate times `estimateMargin`.
   */
  model?: string;
  /** The encoding, overriding `model`. Default o200k_base. */
  encoding?: EncodingName;
  /** Safety margin for unknown models' estimates. Default 1.25. */
  estimateMargin?: number;
  /** Tokenizer implementation. Default `gpt-tokenizer` (same counts as js-tiktoken, faster: see README). */
  tokenizer?: TokenizerOption;
  /** The most recent turns always sent verbatim when they fit. Default 6. */
  protectedRecentTurns?: number;
  /** Share of the window above which compaction runs proactively. Default 0.70. */
  softThreshold?: number;
  /** Share of the window above which compaction runs before returning. Default 0.85. */
  hardThreshold?: number;
  /** Where turns live. Default: sqlite-wasm in memory. */
  storage?: StorageOption;
  /** The largest message accepted, in UTF-8 bytes of its text. Default 1 MiB. */
  maxMessageBytes?: number;
  /** The largest attachment (image, file, audio) accepted, in bytes; a larger one is ATTACHMENT_TOO_LARGE. Default 20 MiB. */
  maxAttachmentBytes?: number;
  /**
   * How far ahead of this replica's clock a synced change may be stamped, in ms (default 600,000: ten minutes). A turn
   * or forget from further ahead — a device whose clock is wrong, or a forged batch — is held aside, not applied,
   * until this clock reaches it (the sync reports it as `held`); checkouts, pins and aliases from further ahead wait
   * the same way. Keeps one wrong clock from erasing later writes or pushing every later key into the future.
   */
  maxClockSkewMs?: number;
  /**
   * Sync: how long a peer not heard from keeps this replica's forgets (tombstones: ids and hashes, never text) from
   * being compacted, in days (default 90). Tombstones every peer heard from within it has read are deleted; a peer
   * away longer is told to resync when it comes back. null: keep them until every peer has read them.
   */
  tombstoneRetentionDays?: number | null;
  /**
   * Whose documented rule counts images, files and audio: `openai` (image tiles) or `anthropic` (width × height /
   * 750). Default: `anthropic` for a `model` named claude…, else `openai`. A request may say otherwise.
   */
  mediaTokens?: MediaRule;
  /**
   * The size an assembled request aims for when the question does not need more: recent turns and what the
   * question recalls, not the whole window. Broad and temporal questions may use up to `contextWindow −
   * reserveTokens`. Default `max(2048, 30% of contextWindow)`, at most what is available.
   */
  targetTokens?: number;
  /**
   * Where recalled excerpts go. `message` (default): a system message just before the new message, so the stable
   * part (`prependText`) stays first and a provider's prompt cache keeps hitting. `prependText`: appended to
   * `prependText`, for providers without system messages inside the conversation.
   */
  recallPlacement?: 'message' | 'prependText';
  /**
   * The `<context-topics>` hint in `prependText`: `'broad'` (default: with broad questions only, where naming the
   * topics is the answer), `true` (with every question that recalls, for a model given `pagewise_expand`), `false`,
   * or `{ maxTokens }` (every question, that cap; default 200).
   */
  topicsHint?: boolean | 'broad' | { maxTokens: number };
  /** The LLM used to tag and summarize: a provider, or an endpoint as data. Without one everything runs offline. */
  llm?: LlmProvider | LlmOptions;
  /**
   * Which tagger: `llm` (default when `llm` is set), `keyword` (default otherwise), `embedding` (the keyword tagger's
   * tags, plus stored tags whose names lie near the question or its tags, by the embedder; see the README for what it
   * measured), or your own.
   */
  tagger?: 'keyword' | 'llm' | 'embedding' | Tagger;
  /** Tags you define by their words: `{ database: ['db', 'sql', 'postgres'] }`. Matched by the keyword tagger. */
  tagKeywords?: Record<string, string[]>;
  /** Tags per unit the LLM tagger is asked for, at least. Default 2. */
  minTags?: number;
  /** Tags per unit at most (both taggers). Default 8. */
  maxTags?: number;
  /** Priorities, TTLs and summary prompts per tag family, first match wins. Default: one rule `*`, priority 5. */
  tagRules?: TagRule[];
  /** Compact automatically at the soft and hard thresholds. Default true; `memory.compact()` works either way. */
  compaction?: boolean;
  /** Which summarizer: `llm` (default when `llm` is set), `extractive` (default otherwise), or your own. */
  summarizer?: 'extractive' | 'llm' | Summarizer;
  /** A summary's length as a share of what it summarizes. Default 0.25 (seed 003: 20–30%). */
  summaryRatio?: number;
  /** Tokens per summary at most. Default `contextWindow / 20`, from 64 to 256. */
  summaryTokens?: number;
  /** Turns per level-1 (segment) summary at most (seed 004's `sum_window`). Default 12. */
  sumWindow?: number;
  /** Also compact once this many turns lie past the protected ones, whatever their tokens (seed 004's `n_sum`). Default: off. */
  nSum?: number | null;
  /** Summaries of one level rolled up into one of the next (seed 004's `n_sum_sum`). Default 3. */
  nSumSum?: number;
  /** The master summary's level (seed 004's `max_sum_lvl`). Default 3. */
  maxSumLevel?: number;
  /** Summaries written at once. Default 4. */
  maxConcurrentSummaries?: number;
  /**
   * Turns one background compaction pass compacts at most; the rest is left for `memory.compact(id, { maxTurns })`
   * or the next pass the thresholds call for (the report says `more`). Default null: a pass goes on to the protected
   * turns, yielding between slices. `PagewiseMemory` sets 4,096 and goes on from its alarm (30 s of CPU per event).
   */
  backgroundSliceTurns?: number | null;
  /** Runs of more tool messages than this (before the current round) are sent compressed. Default 6. */
  minConsecutiveToolMessages?: number;
  /** Messages longer than this many characters may be offloaded: sent as a preview and an id. Default 5,120. */
  largePayloadThreshold?: number;
  /** Characters of an offloaded message's preview. Default 200. */
  offloadPreview?: number;
  /**
   * The embedding model for meaning-based recall. Default: all-MiniLM-L6-v2 (8-bit) on transformers.js, shipped as
   * `@pagewise/all-minilm-l6-v2` (offline, loaded lazily, in its own thread). `false` turns embeddings off.
   */
  embedder?: EmbedderOptions;
  /**
   * Start loading the embedding model when the memory is created, so the first question does not wait for it (and
   * `onModelProgress` reports the load up front). Default: true in `connect()` (the browser), false in `createMemory()`.
   */
  preloadEmbedder?: boolean;
  /** Cosine similarity at which a vector hit counts. Default: the embedder's calibrated threshold (all-MiniLM-L6-v2 0.3). */
  similarityThreshold?: number;
  /**
   * The learned ranking of recall candidates. Default: the weights shipped with the library (trained on public
   * long-conversation benchmarks). Retrain on your own labelled conversations with `tests/bench/retrain.ts`.
   */
  ranking?: RankingOptions;
  /**
   * External search: current facts from the web, placed first in the memory block within their share of it. Off by
   * default — a search sends words of the user's message to the providers. Queries are built from the new message
   * alone, private turns' words and personal data taken out; the manifest shows each query exactly.
   */
  search?: SearchOptions;
  /**
   * What the memory keeps: `{ maxAgeDays, maxConversations, idleDays, keepPinned }`, enforced in the background a
   * slice at a time (each conversation may narrow it: `memory.setRetention`). Default: everything is kept.
   */
  retention?: RetentionOptions;
  /**
   * Background maintenance (retention, rebuilding what an older summarizer, tagger or embedder made): `auto` (default)
   * runs it between calls a slice at a time; `manual` only when `memory.maintain()` is called (PagewiseMemory's alarms).
   */
  maintenance?: 'auto' | 'manual';
  /**
   * OpenTelemetry: by default a span per call and metrics go to the providers the app registered with
   * `@opentelemetry/api` (none registered: nothing is recorded, at no cost). `{ tracer, meter }`: an OpenTelemetry
   * `Tracer` and `Meter` to use instead; `false`: none.
   */
  telemetry?: false | { tracer?: object; meter?: object };
  /** Called as the background queue embeds a conversation's turns and summaries. */
  onEmbeddingProgress?: (progress: EmbeddingProgress) => void;
  /** Called while the embedding model loads. */
  onModelProgress?: (progress: ModelProgress) => void;
}

/** A ranking model: one weight per feature, by name (features it does not name weigh 0). */
export interface RankingWeights {
  format: 'pagewise-ranking/1';
  weights: Record<string, number>;
  /** What it was trained on, in words. */
  trainedOn?: string;
}

/** Every recall candidate of one question with its features (retraining; `features` names the columns). */
export interface RankingCandidates {
  conversationId: string;
  features: readonly string[];
  candidates: { id: string; seq: number; features: number[] }[];
}

export interface RankingOptions {
  /** Weights to rank with instead of the shipped ones (a file `tests/bench/retrain.ts` wrote). */
  weights?: RankingWeights;
  /** Called with every question's candidates and their features: the data to retrain on. */
  onCandidates?: (candidates: RankingCandidates) => void;
}
