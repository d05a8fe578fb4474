import { isPagewiseError, PagewiseError } from '../contracts/errors.js';
import { DEFAULT_MAX_ATTACHMENT_BYTES, describe, isWellFormed } from '../common/messages.js';
import { ruleForModel } from '../tokens/media.js';
import { encodingForModel } from '../tokens/tokenizer.js';
import { SHIPPED_WEIGHTS, readWeights } from '../retrieval/ranking.js';
import { type ResolvedSearch, resolveSearch } from '../search/options.js';
import type { RankingCandidates } from '../contracts/types-options.js';
import type { EmbedderOptions, EmbeddingProgress, ModelProgress } from '../contracts/types-embed.js';
import type { EncodingName, LlmOptions, LlmProvider, MediaRule, MemoryOptions, StorageOption, Summarizer, TagRule, Tagger, TokenizerOption } from '../contracts/types.js';
import { type ResolvedRetention, readRetention } from './retention-options.js';

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions {
  contextWindow: number;
  reserveTokens: number;
  memoryTokens: number;
  /** memoryTokens was not given: memory may also take what targetTokens leaves unspent. */
  memoryTokensAuto: boolean;
  encoding: EncodingName;
  margin: number;
  tokenizer: TokenizerOption;
  protectedRecentTurns: number;
  softThreshold: number;
  hardThreshold: number;
  maxMessageBytes: number;
  maxAttachmentBytes: number;
  maxClockSkewMs: number;
  /** Days a peer not heard from holds tombstone compaction back (null: until it has read them). */
  tombstoneRetentionDays: number | null;
  /** Whose rule counts images, files and audio unless a request says otherwise. */
  mediaTokens: MediaRule;
  storage: StorageOption | undefined;
  targetTokens: number;
  recallPlacement: 'message' | 'prependText';
  /** 0 when the hint is off. */
  topicsHintTokens: number;
  /** The hint goes with every question that recalls, not only broad ones. */
  topicsHintAlways: boolean;
  llm: LlmProvider | LlmOptions | undefined;
  tagger: 'keyword' | 'llm' | 'embedding' | Tagger;
  tagKeywords: Record<string, string[]>;
  minTags: number;
  maxTags: number;
  tagRules: TagRule[];
  compaction: boolean;
  summarizer: 'extractive' | 'llm' | Summarizer;
  summaryRatio: number;
  summaryTokens: number;
  sumWindow: number;
  nSum: number | null;
  nSumSum: number;
  maxSumLevel: number;
  maxConcurrentSummaries: number;
  backgroundSliceTurns: number | null;
  minConsecutiveToolMessages: number;
  largePayloadThreshold: number;
  offloadPreview: number;
  /** null: none. `implicit` when it is the default nobody asked for (a missing package is then quiet). */
  embedder: Exclude<EmbedderOptions, false> | null;
  embedderImplicit: boolean;
  preloadEmbedder: boolean;
  similarityThreshold: number | undefined;
  onEmbeddingProgress: ((progress: EmbeddingProgress) => void) | undefined;
  onModelProgress: ((progress: ModelProgress) => void) | undefined;
  /** The ranker's weights (FEATURES order), and who sees its candidates. */
  ranking: { weights: Float64Array; onCandidates: ((c: RankingCandidates) => void) | undefined };
  /** External search; null when off. */
  search: ResolvedSearch | null;
  /** OpenTelemetry's tracer and meter, or false; undefined: the global providers. */
  telemetry: false | { tracer?: object; meter?: object } | undefined;
  /** `auto`: the engine runs maintenance slices itself; `manual`: only memory.maintain() (the edge's alarms). */
  maintenance: 'auto' | 'manual';
  /** The retention option, checked (engine/retention-options.ts); null: keep everything. */
  retention: ResolvedRetention | null;
}

const KNOWN = new Set(['contextWindow', 'reserveTokens', 'memoryTokens', 'model', 'encoding', 'estimateMargin', 'tokenizer',
  'protectedRecentTurns', 'softThreshold', 'hardThreshold', 'storage', 'maxMessageBytes', 'maxAttachmentBytes', 'maxClockSkewMs', 'tombstoneRetentionDays', 'mediaTokens', 'targetTokens', 'recallPlacement',
  'topicsHint', 'llm', 'tagger', 'tagKeywords', 'minTags', 'maxTags', 'tagRules', 'compaction', 'summarizer', 'summaryRatio',
  'summaryTokens', 'sumWindow', 'nSum', 'nSumSum', 'maxSumLevel', 'maxConcurrentSummaries', 'backgroundSliceTurns', 'minConsecutiveToolMessages',
  'largePayloadThreshold', 'offloadPreview', 'embedder', 'preloadEmbedder', 'similarityThreshold', 'onEmbeddingProgress', 'onModelProgress', 'ranking', 'search',
  'retention', 'maintenance', 'telemetry']);

function bad(option: string, message: string): never {
  throw new PagewiseError('INVALID_OPTIONS', 'options', `\`${option}\` ${message}`, { path: option });
}

function int(value: unknown, option: string, min: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) bad(option, `must be an integer ≥ ${min} (got ${describe(value)}).`);
  return value;
}

/** At most a year: a larger skew would take any clock's changes as they come (and past the last date a Date holds). */
function clockSkew(value: unknown): number {
  const ms = int(value, 'maxClockSkewMs', 0, 600_000);
  if (ms > 365 * 24 * 3600 * 1000) bad('maxClockSkewMs', `must be at most a year in ms (31,536,000,000; got ${ms}).`);
  return ms;
}

/** Whole days from 1 to 36,500, or null (keep tombstones until every known peer has read them). */
function tombstoneDays(value: unknown): number | null {
  if (value === undefined) return 90;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 36_500) bad('tombstoneRetentionDays', `must be a whole number of days from 1 to 36,500, or null to keep tombstones until every peer has read them (got ${describe(value)}).`);
  return value;
}

function readTelemetry(value: unknown): false | { tracer?: object; meter?: object } | undefined {
  if (value === undefined || value === false) return value;
  const ok = (x: unknown) => x === undefined || (typeof x === 'object' && x !== null);
  if (typeof value !== 'object' || value === null || !ok((value as { tracer?: unknown }).tracer) || !ok((value as { meter?: unknown }).meter)) {
    bad('telemetry', `must be false, or { tracer?, meter? } with an OpenTelemetry Tracer and Meter (got ${describe(value)}).`);
  }
  return value as { tracer?: object; meter?: object };
}

function readMaintenance(value: unknown): 'auto' | 'manual' {
  if (value === undefined) return 'auto';
  if (value !== 'auto' && value !== 'manual') bad('maintenance', `must be 'auto' (the engine runs it between calls) or 'manual' (only memory.maintain()); got ${describe(value)}.`);
  return value;
}

function ratio(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0 && value <= 1)) bad(option, `must be a number in (0, 1] (got ${describe(value)}).`);
  return value;
}

/**
 * Checks options once, at construction, and fills in the defaults. Reading them is pure validation: anything thrown
 * while reading (a revoked Proxy, a getter that throws) is the caller's unreadable input, so INVALID_OPTIONS.
 */
export function resolveOptions(options: MemoryOptions = {}): ResolvedOptions {
  try {
    return resolve(options);
  } catch (cause) {
    if (isPagewiseError(cause)) throw cause;
    throw new PagewiseError('INVALID_OPTIONS', 'options', `The options could not be read (${String((cause as Error)?.message ?? cause)}): pass a plain object of options (no revoked Proxy, no getter that throws).`, { cause });
  }
}

function resolve(options: MemoryOptions): ResolvedOptions {
  checkShape(options);
  const { contextWindow, reserveTokens, available } = readWindow(options);
  const { encoding, margin } = readEncoding(options);
  const tokenizer = readTokenizer(options);
  const { softThreshold, hardThreshold } = readThresholds(options);
  const storage = readStorage(options);
  const { targetTokens, memoryTokens, recallPlacement } = readBudget(options, contextWindow, available);
  const { topicsHintTokens, topicsHintAlways } = readTopicsHint(options);
  const llm = readLlm(options);
  const { tagger, tagKeywords, minTags, maxTags, tagRules } = readTagging(options, llm);
  const summarizer = readSummarizer(options, llm);
  if (options.compaction !== undefined && typeof options.compaction !== 'boolean') bad('compaction', 'must be true or false.');
  if (options.preloadEmbedder !== undefined && typeof options.preloadEmbedder !== 'boolean') bad('preloadEmbedder', 'must be true or false.');
  const summaryRatio = ratio(options.summaryRatio, 'summaryRatio', 0.25);
  const { embedder, similarityThreshold } = readEmbedder(options);
  const nSum = options.nSum === undefined || options.nSum === null ? null : int(options.nSum, 'nSum', 1, 1);
  return {
    compaction: options.compaction ?? true,
    embedder: embedder === false ? null : embedder ?? { provider: 'transformers' },
    embedderImplicit: embedder === undefined,
    preloadEmbedder: options.preloadEmbedder ?? false,
    similarityThreshold,
    ranking: readRanking(options),
    search: resolveSearch(options.search),
    maintenance: readMaintenance(options.maintenance),
    telemetry: readTelemetry(options.telemetry),
    retention: readRetention(options.retention),
    onEmbeddingProgress: options.onEmbeddingProgress,
    onModelProgress: options.onModelProgress,
    summarizer,
    summaryRatio,
    summaryTokens: int(options.summaryTokens, 'summaryTokens', 16, Math.max(64, Math.min(256, Math.floor(contextWindow / 20)))),
    sumWindow: int(options.sumWindow, 'sumWindow', 2, 12),
    nSum,
    nSumSum: int(options.nSumSum, 'nSumSum', 2, 3),
    maxSumLevel: int(options.maxSumLevel, 'maxSumLevel', 2, 3),
    maxConcurrentSummaries: int(options.maxConcurrentSummaries, 'maxConcurrentSummaries', 1, 4),
    backgroundSliceTurns: options.backgroundSliceTurns === undefined || options.backgroundSliceTurns === null ? null : int(options.backgroundSliceTurns, 'backgroundSliceTurns', 1, 1),
    minConsecutiveToolMessages: int(options.minConsecutiveToolMessages, 'minConsecutiveToolMessages', 1, 6),
    largePayloadThreshold: int(options.largePayloadThreshold, 'largePayloadThreshold', 100, 5 * 1024),
    offloadPreview: int(options.offloadPreview, 'offloadPreview', 0, 200),
    targetTokens,
    recallPlacement,
    topicsHintTokens,
    topicsHintAlways,
    llm,
    tagger,
    tagKeywords,
    minTags,
    maxTags,
    tagRules,
    contextWindow,
    reserveTokens,
    memoryTokens,
    memoryTokensAuto: options.memoryTokens === undefined,
    encoding,
    margin,
    tokenizer,
    protectedRecentTurns: int(options.protectedRecentTurns, 'protectedRecentTurns', 0, 6),
    softThreshold,
    hardThreshold,
    maxMessageBytes: int(options.maxMessageBytes, 'maxMessageBytes', 1, 1024 * 1024),
    maxAttachmentBytes: int(options.maxAttachmentBytes, 'maxAttachmentBytes', 1, DEFAULT_MAX_ATTACHMENT_BYTES),
    maxClockSkewMs: clockSkew(options.maxClockSkewMs),
    tombstoneRetentionDays: tombstoneDays(options.tombstoneRetentionDays),
    mediaTokens: readMediaRule(options),
    storage,
  };
}

// Each reader below checks one group of options, in the order resolve() calls them (the first bad option found is
// the one reported, so the order is part of the behaviour).

function checkShape(options: MemoryOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) bad('options', `must be an object of options such as { contextWindow: 8000 } (got ${describe(options)}).`);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) bad(key, `is not an option. Known options: ${[...KNOWN].join(', ')}.`);
  }
}

function readWindow(options: MemoryOptions) {
  const contextWindow = int(options.contextWindow, 'contextWindow', 256, 128_000);
  const reserveTokens = int(options.reserveTokens, 'reserveTokens', 0, Math.min(4096, Math.floor(contextWindow / 4)));
  if (reserveTokens >= contextWindow) bad('reserveTokens', `(${reserveTokens}) must be smaller than contextWindow (${contextWindow}).`);
  return { contextWindow, reserveTokens, available: contextWindow - reserveTokens };
}

function readEncoding(options: MemoryOptions): { encoding: EncodingName; margin: number } {
  let encoding: EncodingName = 'o200k_base';
  let margin = 1;
  if (options.model !== undefined) {
    if (typeof options.model !== 'string' || options.model.length === 0 || !isWellFormed(options.model)) bad('model', 'must be a model name such as "gpt-4o".');
    const known = encodingForModel(options.model);
    if (known) encoding = known;
    else margin = options.estimateMargin ?? 1.25;
  }
  if (options.encoding !== undefined) {
    if (options.encoding !== 'o200k_base' && options.encoding !== 'cl100k_base') bad('encoding', `must be "o200k_base" or "cl100k_base" (got ${describe(options.encoding)}).`);
    encoding = options.encoding;
    margin = 1;
  }
  if (options.estimateMargin !== undefined && (typeof options.estimateMargin !== 'number' || !(options.estimateMargin >= 1 && options.estimateMargin <= 4))) {
    bad('estimateMargin', `must be a number from 1 to 4 (got ${describe(options.estimateMargin)}).`);
  }
  return { encoding, margin };
}

function readMediaRule(options: MemoryOptions): MediaRule {
  if (options.mediaTokens !== undefined && options.mediaTokens !== 'openai' && options.mediaTokens !== 'anthropic') bad('mediaTokens', `must be "openai" or "anthropic" (got ${describe(options.mediaTokens)}).`);
  return options.mediaTokens ?? ruleForModel(options.model);
}

function readTokenizer(options: MemoryOptions): TokenizerOption {
  const tokenizer = options.tokenizer ?? 'gpt-tokenizer';
  if (tokenizer !== 'gpt-tokenizer' && tokenizer !== 'js-tiktoken'
    && (typeof tokenizer !== 'object' || tokenizer === null || typeof tokenizer.count !== 'function')) {
    bad('tokenizer', 'must be "gpt-tokenizer", "js-tiktoken" or an object with count(text).');
  }
  return tokenizer;
}

function readThresholds(options: MemoryOptions) {
  const softThreshold = ratio(options.softThreshold, 'softThreshold', 0.7);
  const hardThreshold = ratio(options.hardThreshold, 'hardThreshold', 0.85);
  if (softThreshold > hardThreshold) bad('softThreshold', `(${softThreshold}) must not be above hardThreshold (${hardThreshold}).`);
  return { softThreshold, hardThreshold };
}

function readStorage(options: MemoryOptions): StorageOption | undefined {
  const storage = options.storage;
  if (storage !== undefined && typeof storage !== 'function'
    && (typeof storage !== 'object' || storage === null || typeof storage.query !== 'function' || typeof storage.batch !== 'function')) {
    bad('storage', 'must be a StorageDriver ({ query, batch, close }) or a function returning one.');
  }
  return storage;
}

function readBudget(options: MemoryOptions, contextWindow: number, available: number) {
  const targetTokens = int(options.targetTokens, 'targetTokens', 1, Math.min(available, Math.max(2048, Math.floor(contextWindow * 0.3))));
  // Recalled memory may take half of what a request aims for, as the protected recent turns may take the other half
  // (a quarter of the window left small windows with a few hundred tokens of recall and the target unspent).
  const memoryTokens = int(options.memoryTokens, 'memoryTokens', 0, Math.min(4096, Math.max(Math.floor(available / 4), Math.floor(targetTokens / 2))));
  const recallPlacement = options.recallPlacement ?? 'message';
  if (recallPlacement !== 'message' && recallPlacement !== 'prependText') bad('recallPlacement', `must be "message" or "prependText" (got ${describe(recallPlacement)}).`);
  return { targetTokens, memoryTokens, recallPlacement };
}

function readTopicsHint(options: MemoryOptions) {
  // On broad questions only by default: on others the hint held no turn a question asked about and cost recall its
  // tokens (LoCoMo at window 3,000: evidence 0.834 with it on every question, 0.851 without).
  const hint = options.topicsHint ?? 'broad';
  let topicsHintTokens = 0;
  if (hint === true || hint === 'broad') topicsHintTokens = 200;
  else if (typeof hint === 'object' && hint !== null) topicsHintTokens = int(hint.maxTokens, 'topicsHint.maxTokens', 20, 200);
  else if (hint !== false) bad('topicsHint', 'must be true, false, "broad" or { maxTokens }.');
  return { topicsHintTokens, topicsHintAlways: hint !== 'broad' };
}

function readLlm(options: MemoryOptions): LlmProvider | LlmOptions | undefined {
  const llm = options.llm;
  if (llm !== undefined) {
    const isProvider = typeof llm === 'object' && llm !== null && typeof (llm as LlmProvider).complete === 'function';
    const c = llm as { provider?: unknown; baseUrl?: unknown; model?: unknown };
    const isConfig = typeof llm === 'object' && llm !== null && typeof c.model === 'string' && c.model !== '' && (c.provider === 'anthropic'
      ? c.baseUrl === undefined || (typeof c.baseUrl === 'string' && /^https?:\/\//.test(c.baseUrl))
      : (c.provider === undefined || c.provider === 'openai-compatible') && typeof c.baseUrl === 'string' && /^https?:\/\//.test(c.baseUrl));
    const strings = isConfig ? Object.values(llm as object).filter((v): v is string => typeof v === 'string') : [];
    if (strings.some((v) => !isWellFormed(v))) bad('llm', 'holds a string that is not well-formed Unicode (a lone UTF-16 surrogate).');
    if (!isProvider && !isConfig) bad('llm', 'must be an LlmProvider ({ complete }), { baseUrl: "http(s)://…/v1", model, apiKey? } or { provider: "anthropic", model, apiKey? }.');
  }
  return llm;
}

function readTagging(options: MemoryOptions, llm: LlmProvider | LlmOptions | undefined) {
  const tagger = options.tagger ?? (llm ? 'llm' : 'keyword');
  if (tagger !== 'keyword' && tagger !== 'llm' && tagger !== 'embedding' && (typeof tagger !== 'object' || tagger === null || typeof tagger.tag !== 'function')) {
    bad('tagger', 'must be "keyword", "llm", "embedding" or a Tagger ({ name, tag(request) }).');
  }
  if (tagger === 'embedding' && options.embedder === false) bad('tagger', 'is "embedding" but `embedder` is false: leave embedder unset (the shipped model) or name one.');
  if (tagger === 'llm' && !llm) bad('tagger', 'is "llm" but no `llm` is configured: pass llm: { baseUrl, model } or use "keyword".');
  const tagKeywords = options.tagKeywords ?? {};
  if (typeof tagKeywords !== 'object' || tagKeywords === null || Array.isArray(tagKeywords)
    || Object.entries(tagKeywords).some(([tag, w]) => !isWellFormed(tag) || !Array.isArray(w) || w.some((x) => typeof x !== 'string' || x.trim() === '' || !isWellFormed(x)))) {
    bad('tagKeywords', 'must map each tag to a list of non-empty words, e.g. { database: ["db", "sql"] }.');
  }
  const minTags = int(options.minTags, 'minTags', 0, 2);
  const maxTags = int(options.maxTags, 'maxTags', 1, 8);
  if (minTags > maxTags) bad('minTags', `(${minTags}) must not be above maxTags (${maxTags}).`);
  const tagRules = options.tagRules ?? [];
  if (!Array.isArray(tagRules) || tagRules.some((r) => typeof r !== 'object' || r === null || typeof r.match !== 'string' || r.match === '' || !isWellFormed(r.match)
    || (r.priority !== undefined && !Number.isFinite(r.priority))
    || (r.ttlDays !== undefined && r.ttlDays !== null && !(typeof r.ttlDays === 'number' && r.ttlDays > 0 && Number.isFinite(r.ttlDays)))
    || (r.summaryPrompt !== undefined && (typeof r.summaryPrompt !== 'string' || !isWellFormed(r.summaryPrompt))))) {
    bad('tagRules', 'must be a list of { match: "glob*", priority?: number, ttlDays?: number > 0 | null, summaryPrompt?: string }.');
  }
  return { tagger, tagKeywords, minTags, maxTags, tagRules };
}

function readSummarizer(options: MemoryOptions, llm: LlmProvider | LlmOptions | undefined): ResolvedOptions['summarizer'] {
  const summarizer = options.summarizer ?? (llm ? 'llm' : 'extractive');
  if (summarizer !== 'extractive' && summarizer !== 'llm' && (typeof summarizer !== 'object' || summarizer === null || typeof summarizer.summarize !== 'function')) {
    bad('summarizer', 'must be "extractive", "llm" or a Summarizer ({ name, version, summarize(request) }).');
  }
  if (summarizer === 'llm' && !llm) bad('summarizer', 'is "llm" but no `llm` is configured: pass llm: { baseUrl, model } or use "extractive".');
  return summarizer;
}

/** The embedder as given (undefined: the default), and the similarity threshold; the progress callbacks checked. */
function readEmbedder(options: MemoryOptions) {
  const embedder = options.embedder;
  if (embedder !== undefined && embedder !== false) {
    const e = embedder as { provider?: unknown; embed?: unknown; modelId?: unknown; dimensions?: unknown; model?: unknown; baseUrl?: unknown };
    const ok = typeof embedder === 'object' && embedder !== null && (
      (typeof e.embed === 'function' && typeof e.modelId === 'string' && e.modelId !== '' && Number.isInteger(e.dimensions) && Number(e.dimensions) > 0)
      || (e.provider === 'transformers' && (e.model === undefined || (typeof e.model === 'string' && e.model !== '')))
      || (e.provider === 'openai-compatible' && typeof e.model === 'string' && e.model !== '' && typeof e.baseUrl === 'string' && /^https?:\/\//.test(e.baseUrl)));
    if (!ok) {
      bad('embedder', 'must be false, an Embedder ({ modelId, dimensions, maxBatchSize, embed(texts) }), { provider: "transformers", model? } '
        + 'or { provider: "openai-compatible", baseUrl: "http(s)://…/v1", model, apiKey? }.');
    }
  }
  const similarityThreshold = options.similarityThreshold;
  if (similarityThreshold !== undefined && (typeof similarityThreshold !== 'number' || !(similarityThreshold >= -1 && similarityThreshold <= 1))) {
    bad('similarityThreshold', `must be a cosine similarity from -1 to 1, e.g. 0.3 for all-MiniLM-L6-v2 (got ${describe(similarityThreshold)}).`);
  }
  for (const name of ['onEmbeddingProgress', 'onModelProgress'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') bad(name, 'must be a function.');
  }
  return { embedder, similarityThreshold };
}

function readRanking(options: MemoryOptions): ResolvedOptions['ranking'] {
  const r = options.ranking;
  if (r === undefined) return { weights: SHIPPED_WEIGHTS, onCandidates: undefined };
  if (typeof r !== 'object' || r === null || Array.isArray(r)) bad('ranking', `must be an object ({ weights?, onCandidates? }) (got ${describe(r)}).`);
  const unknown = Object.keys(r).filter((k) => k !== 'weights' && k !== 'onCandidates');
  if (unknown.length > 0) bad('ranking', `has no option ${JSON.stringify(unknown[0])} (known: weights, onCandidates).`);
  if (r.onCandidates !== undefined && typeof r.onCandidates !== 'function') bad('ranking', `onCandidates must be a function (got ${describe(r.onCandidates)}).`);
  return { weights: r.weights === undefined ? SHIPPED_WEIGHTS : readWeights(r.weights), onCandidates: r.onCandidates };
}
