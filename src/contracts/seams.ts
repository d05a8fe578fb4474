/**
 * The contract of the tagging and LLM seams: what a tagger is asked and answers, tag rules, and the LLM provider
 * interface. Part of the contract file (types.ts re-exports it); nothing here has behaviour.
 */
// ---------------------------------------------------------------------------------------------
// Seam: tagger
// ---------------------------------------------------------------------------------------------

/** What a tagger is asked: one unit (a user turn with its replies) after a turn, or the new message before one. */
export interface TagRequest {
  /** The text to tag. Speaker names are written in front of each turn (`Caroline: …`). */
  text: string;
  /** `unit`: stored turns being indexed. `query`: an inbound message being matched against stored tags. */
  kind: 'unit' | 'query';
  /**
   * Known tags of the conversation, most used first (vocabulary feedback: reuse these when the topic matches). Only
   * the keyword tagger (the last, local one) is given the tags that private messages alone carry: they are their words.
   */
  vocabulary: readonly string[];
  minTags: number;
  maxTags: number;
  /**
   * The conversation's term statistics: how many turns there are and in how many each term occurs (canonical
   * spelling). The keyword tagger prefers words that are rare in the conversation.
   */
  stats?: { turns: number; termFrequencies(terms: readonly string[]): Promise<ReadonlyMap<string, number>> };
  /** `query`: every stored tag of the conversation with the number of units it is on (for taggers that match all; as `vocabulary`, without private messages' own tags for all but the keyword tagger). */
  stored?: ReadonlyMap<string, number>;
  /**
   * `query`, when embeddings are on: the question's vector (unit length) or null (model loading, failed). It is the
   * vector retrieval uses, computed once, in the model's thread, while the tagger runs.
   */
  embedding?: () => Promise<Float32Array | null>;
  /** Aborts the call (timeouts, closing the engine). */
  signal?: AbortSignal;
  /** The conversation, for the LLM usage ledger. */
  conversationId?: string;
}

/** A tagger's answer. Tags may be in any spelling: the engine canonicalizes them before storing or matching. */
export interface TagResult {
  /** Topics of the text. */
  tags: string[];
  /** Alternate terms someone might use later for the same things (`materialized views` → `caching`). */
  relatedTags: string[];
  /** Set by taggers that detect it: the message asks about everything ("what did we discuss?"). */
  broad?: boolean;
  /** Set by taggers that detect it: the message refers to a position in time ("early on"). */
  temporal?: boolean;
}

/**
 * Assigns topic tags. Built in: `keyword` (offline, always the last fallback), `llm` and `embedding`. A tagger that
 * throws or times out hands over to the next one.
 */
export interface Tagger {
  /** Recorded with each unit it tagged (`keyword`, `llm:gpt-4o-mini`). */
  readonly name: string;
  /**
   * Bump when what it tags changes: a conversation tagged by another version is tagged again in the background
   * (`memory.maintain()`), the old tags serving recall until the new index is whole. Absent: never rebuilt.
   */
  readonly version?: number;
  tag(request: TagRequest): Promise<TagResult>;
}

/** A tag rule: what a family of tags is worth. The first rule whose pattern matches a tag applies to it. */
export interface TagRule {
  /** A glob over canonical tags (`architecture*`, `debug*`, `*`), matched with picomatch. */
  match: string;
  /** Higher is assembled first when the budget cannot hold every recalled block. Default 5. */
  priority?: number;
  /** Memory tagged only with expired tags stops being recalled after this many days (it is not deleted). */
  ttlDays?: number | null;
  /** Instructions for summaries of these tags (used by compaction). */
  summaryPrompt?: string;
}

// ---------------------------------------------------------------------------------------------
// Seam: LLM provider
// ---------------------------------------------------------------------------------------------

/** One message of a request to an LLM provider. */
export interface LlmMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A request to an LLM provider. */
export interface LlmRequest {
  messages: LlmMessage[];
  /** Ask for a JSON object as the reply (`response_format: json_object` where the provider has it). */
  json?: boolean;
  maxTokens?: number;
  temperature?: number;
  signal?: AbortSignal;
  /** What the call is for, recorded in the usage ledger (`memory.costReport()`). */
  purpose?: 'tag' | 'summarize' | (string & {});
  /** The conversation it is for, recorded in the usage ledger. */
  conversationId?: string;
}

/** A provider's reply. */
export interface LlmResponse {
  text: string;
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
}

/** A chat-completion endpoint. Built in: `openaiCompatible()` (OpenAI, Ollama, LM Studio, vLLM). */
export interface LlmProvider {
  readonly name: string;
  readonly model: string;
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** Prices per million tokens, for the cost column of `memory.costReport()`. */
export interface LlmPricing {
  inputPerMillion: number;
  outputPerMillion: number;
}

/** Transport settings shared by the built-in providers. */
export interface LlmTransportOptions {
  /** Per attempt. Default 20,000 ms. */
  timeoutMs?: number;
  /** Retries after HTTP 429 / 5xx or a network error, with exponential backoff (honouring Retry-After). Default 2. */
  maxRetries?: number;
  /** First backoff delay; doubled per retry, with jitter. Default 500 ms. */
  retryDelayMs?: number;
  /** Extra headers (organization, project, proxies). */
  headers?: Record<string, string>;
  /** Prices, so the ledger can report cost. */
  pricing?: LlmPricing;
}

/** An Anthropic Messages API endpoint as plain data. */
export interface AnthropicOptions extends LlmTransportOptions {
  provider: 'anthropic';
  model: string;
  apiKey?: string;
  /** Default `https://api.anthropic.com`. */
  baseUrl?: string;
  /** `anthropic-version` header. Default `2023-06-01`. */
  version?: string;
  /** `max_tokens` when a request names none (the API requires one). Default 1,024. */
  maxTokens?: number;
}

/** An LLM endpoint as plain data: OpenAI-compatible (default) or Anthropic. */
export type LlmOptions = OpenAICompatibleOptions | AnthropicOptions;

/** An OpenAI-compatible endpoint as plain data, so it can cross to a worker (`connect()` options). */
export interface OpenAICompatibleOptions extends LlmTransportOptions {
  provider?: 'openai-compatible';
  /** E.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` (Ollama). */
  baseUrl: string;
  model: string;
  apiKey?: string;
}

// ---------------------------------------------------------------------------------------------
// Seam: summarizer
// ---------------------------------------------------------------------------------------------

/** One thing to summarize: a stored turn (segments) or a summary (roll-ups). */
export interface SummaryItem {
  id: string;
  /** Who said it (`Caroline`, `user`, `assistant`, `tool`), or `summary`. */
  speaker: string;
  text: string;
  createdAt: string;
}

/** What a summarizer is asked. */
export interface SummaryRequest {
  conversationId: string;
  /** `segment`: consecutive turns on shared tags (level 1). `rollup`/`master`: summaries of one level into the next. `tag`: one tag's segment summaries. */
  kind: 'segment' | 'rollup' | 'master' | 'tag';
  level: number;
  /** For `tag` summaries: the tag. */
  tag?: string;
  items: SummaryItem[];
  /** The text just before and just after the items (seed 003): the summary should read as a bridge between them. */
  before?: string;
  after?: string;
  /**
   * The items' tags and related tags, less those only private messages carry (a private message's text is replaced by
   * a placeholder in `items`, and is never `before` or `after`). A summarizer may add tags; the engine never drops these.
   */
  tags: string[];
  relatedTags: string[];
  /** The tag rules' `summaryPrompt`s for these tags. */
  instructions: string[];
  /** The length to aim for, in tokens. */
  targetTokens: number;
  signal?: AbortSignal;
}

/** A summarizer's answer. */
export interface SummaryResult {
  text: string;
  /** Tags to add (refined topics). Never used to remove any. */
  tags?: string[];
  relatedTags?: string[];
}

/** Writes summaries. Built in: `extractive` (offline, deterministic, the default) and `llm`. */
export interface Summarizer {
  /** Recorded with each summary (`extractive`, `llm:gpt-4o-mini`). */
  readonly name: string;
  /** Bump when the prompt or algorithm changes: summaries made by an older version can be regenerated. */
  readonly version: number;
  summarize(request: SummaryRequest): Promise<SummaryResult>;
}
