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
  /** Known tags of the conversation, most used first (vocabulary feedback: reuse these when the topic matches). */
  vocabulary: readonly string[];
  minTags: number;
  maxTags: number;
  /**
   * The conversation's term statistics: how many turns there are and in how many each term occurs (canonical
   * spelling). The keyword tagger prefers words that are rare in the conversation.
   */
  stats?: { turns: number; termFrequencies(terms: readonly string[]): Promise<ReadonlyMap<string, number>> };
  /** Aborts the call (timeouts, closing the engine). */
  signal?: AbortSignal;
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
 * Assigns topic tags. Built in: `keyword` (offline, always the last fallback) and `llm`; the embedding tagger
 * plugs in here too. A tagger that throws or times out hands over to the next one.
 */
export interface Tagger {
  /** Recorded with each unit it tagged (`keyword`, `llm:gpt-4o-mini`). */
  readonly name: string;
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

/** An OpenAI-compatible endpoint as plain data, so it can cross to a worker (`connect()` options). */
export interface OpenAICompatibleOptions {
  /** E.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` (Ollama). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per request. Default 20,000 ms. */
  timeoutMs?: number;
  /** Extra headers (organization, project, proxies). */
  headers?: Record<string, string>;
}
