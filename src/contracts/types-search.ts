/**
 * The search seam (external search: current facts from the web, placed first in the memory block) and its options,
 * report and statistics. Part of the contract file (types.ts re-exports it); nothing here has behaviour.
 */

import type { LatencyStats, UsageStats } from './types-stats.js';

// ---------------------------------------------------------------------------------------------
// Seam: search provider
// ---------------------------------------------------------------------------------------------

/** One web result as a provider gives it: plain text, no markup. */
export interface SearchResult {
  title: string;
  url: string;
  /** The provider's excerpt of the page. */
  snippet: string;
  /** When the page was published or last changed: ISO 8601, or the provider's own words ("2 days ago"). */
  publishedAt?: string;
  /** The page's main text, when the provider gives it (Tavily's `raw_content`); else pagewise may fetch the page. */
  content?: string;
}

/** What a provider is asked. */
export interface SearchRequest {
  /** The query, already built and anonymized: exactly what the manifest shows. */
  query: string;
  /** Results wanted at most. */
  maxResults: number;
  /** Aborted at the search's deadline (`timeoutMs`) or when the memory closes. */
  signal: AbortSignal;
}

/** A search engine pagewise can ask: your own, beside the built-in SearXNG, Brave and Tavily clients. */
export interface SearchProvider {
  /** Its name in the manifest and the statistics. */
  readonly name: string;
  /** Results, best first. Throw (or reject) on failure: pagewise records why and answers from memory. */
  search(request: SearchRequest): Promise<SearchResult[]>;
}

/** A provider as a plain function (named by the function's name, or `function`). */
export type SearchFunction = (request: SearchRequest) => Promise<SearchResult[]>;

/** A SearXNG instance's JSON API (`GET /search?q=…&format=json`; JSON must be enabled in its settings). No key. */
export interface SearxngOptions {
  provider: 'searxng';
  /** The instance's base URL, e.g. `https://searx.example.org`. */
  url: string;
  /** Engines to ask (SearXNG's `engines`), e.g. `['duckduckgo', 'wikipedia']`. Default: the instance's. */
  engines?: string[];
  /** Categories (SearXNG's `categories`), e.g. `['general', 'news']`. */
  categories?: string[];
  /** Language code, e.g. `en`. */
  language?: string;
  /** Headers every request carries (an instance behind an authenticating proxy). Never logged. */
  headers?: Record<string, string>;
}

/** Brave Search API (`GET /res/v1/web/search`, key in `X-Subscription-Token`). */
export interface BraveSearchOptions {
  provider: 'brave';
  apiKey: string;
  /** Default `https://api.search.brave.com`. */
  baseUrl?: string;
  /** Country code, e.g. `us`. */
  country?: string;
  safesearch?: 'off' | 'moderate' | 'strict';
}

/** Tavily (`POST /search`, key as a bearer token). */
export interface TavilyOptions {
  provider: 'tavily';
  apiKey: string;
  /** Default `https://api.tavily.com`. */
  baseUrl?: string;
  /** Default `basic`. */
  searchDepth?: 'basic' | 'advanced';
  /** Default `general`. */
  topic?: 'general' | 'news';
}

/** A built-in provider as data (what `searxng()`, `braveSearch()` and `tavily()` return): crosses into a worker. */
export type SearchProviderOptions = SearxngOptions | BraveSearchOptions | TavilyOptions;

/**
 * What is taken out of the new message before it becomes a query. Everything is on by default; `false` turns one
 * kind off. Words of the conversation's private turns are always taken out, whatever this says.
 */
export interface SearchAnonymizeOptions {
  /** Email addresses. */
  emails?: boolean;
  /** Phone numbers. */
  phones?: boolean;
  /** Street addresses and postcodes. */
  addresses?: boolean;
  /** Ids: account, card and order numbers, IBANs, UUIDs, long digit or hex runs, keys. */
  ids?: boolean;
  /** Names of people the conversation has mentioned before (and its speakers' names). */
  people?: boolean;
  /** Names (or any words) always taken out, e.g. the user's own name. */
  names?: string[];
  /** Words never taken out (a public figure the conversation mentioned), except private turns' words. */
  allow?: string[];
}

/** What decides whether a message is searched. */
export type SearchTrigger =
  /** Keywords, then (with `llm` configured and no keyword found) the LLM's yes/no. Default. */
  | 'auto'
  /** Keywords only: time words (latest, current, today, this week), "what is", prices, versions, news, names memory does not know. */
  | 'keywords'
  /** The LLM's yes/no for every message (keywords when no LLM is configured). */
  | 'llm'
  /** Every message that is not private. */
  | 'always';

/** External search (`createMemory({ search })`). Off when absent: searching sends the user's words off the device. */
export interface SearchOptions {
  /** Where to search; several are asked at once, their results merged and deduplicated by URL. */
  providers: (SearchProviderOptions | SearchProvider | SearchFunction)[];
  /** Results placed at most. Default 3. */
  maxResults?: number;
  /** The longest a request waits for the search (the decision, the providers and the pages together), ms. Default 5,000. */
  timeoutMs?: number;
  /** What decides. Default `auto`. */
  trigger?: SearchTrigger;
  /** More words (or phrases) that trigger a search, beside the built-in ones. */
  keywords?: string[];
  /** What is taken out of queries. Default: everything listed in SearchAnonymizeOptions. `false`: only private turns' words. */
  anonymize?: boolean | SearchAnonymizeOptions;
  /** The share of the memory budget results may take; recalled memory gets the rest. Default 0.5. */
  share?: number;
  /**
   * Fetch each result's page and keep its main text (cut around the question's words), instead of the provider's
   * snippet. Default true. Pages on loopback, private or link-local addresses are refused unless `allowPrivateHosts`.
   */
  fetchPages?: boolean | { allowPrivateHosts?: boolean; maxBytes?: number };
  /** How long a query's results are reused, ms. Default 600,000 (ten minutes); 0: never. */
  cacheMs?: number;
}

// ---------------------------------------------------------------------------------------------
// What a request says about its search
// ---------------------------------------------------------------------------------------------

/** What decided a search (or `none`). */
export type SearchTriggerKind = 'keyword' | 'name' | 'llm' | 'request' | 'always' | 'none';

/** What anonymization took out of a query, by kind: how many (never the words themselves). */
export type SearchRemoved = Partial<Record<'private' | 'email' | 'phone' | 'address' | 'id' | 'person' | 'name' | 'url', number>>;

/** One provider's part in a search. */
export interface SearchProviderReport {
  name: string;
  outcome: 'ok' | 'empty' | 'timeout' | 'refused' | 'error' | 'garbage';
  results: number;
  ms: number;
  /** Why it failed, in words (no key, no body). */
  error?: string;
}

/** One merged result and what became of it. */
export interface SearchResultReport {
  title: string;
  url: string;
  publishedAt?: string;
  /** The provider that found it first. */
  provider: string;
  /** Where its text came from: the fetched page, the provider's content, or its snippet. */
  text: 'page' | 'provider' | 'snippet';
  /** Why its page was not used, when it was tried. */
  pageError?: string;
  /** Whether it was placed (false: no room in its share). */
  included: boolean;
  tokens: number;
}

/** `AssembledContext.search`: whether this request searched, why, the exact query, and what came back. */
export interface SearchReport {
  /** `searched`: results placed; `empty`: no result; `failed`: every provider failed; `skipped`: no search. */
  outcome: 'searched' | 'empty' | 'failed' | 'skipped';
  trigger: { by: SearchTriggerKind; detail?: string };
  /** In words: what decided, what happened. */
  reason: string;
  /** The query exactly as every provider received it; absent when none was sent. */
  query?: string;
  removed?: SearchRemoved;
  /** The results came from the cache (`cacheMs`): no provider was asked. */
  cached?: boolean;
  /** Time the request spent on search (decision included), ms. */
  ms: number;
  /** Tokens the results could take in this request: their share (`share`) of the memory budget. */
  budget?: number;
  providers: SearchProviderReport[];
  results: SearchResultReport[];
}

/** `memory.stats().search`: since the memory opened. */
export interface SearchStats {
  enabled: boolean;
  /** Requests the trigger looked at. */
  requests: number;
  /** Searches decided, by what decided them. */
  triggered: number;
  triggeredBy: Partial<Record<Exclude<SearchTriggerKind, 'none'>, number>>;
  /** Not searched: no trigger, a private message, the LLM said no, nothing left after anonymizing, `search: false`. */
  skipped: number;
  /** Every provider failed (timeout, HTTP error, refused key, garbage). */
  failed: number;
  /** Providers answered with nothing. */
  empty: number;
  /** Answered from the cache. */
  cached: number;
  /** Results placed in requests. */
  placed: number;
  /** Time per search that went out (decision, providers and pages), over the last 256. */
  latencyMs: LatencyStats;
  /** Per provider: calls, failures, and latency over its last 256. */
  providers: Record<string, { calls: number; failures: number; timeouts: number; latencyMs: LatencyStats }>;
}

/**
 * `memory.stats()`: usage and health (types-stats.ts: per conversation with `conversationId`, else the whole memory),
 * and external search's figures since the memory opened (always the whole memory's).
 */
export interface MemoryStats extends UsageStats {
  search: SearchStats;
}

/** `memory.webSearch()`: a search asked for directly (the MCP `web_search` tool, the CLI). */
export interface WebSearchInput {
  /** What to search for. Anonymized like a message's query (the conversation's private words and people too). */
  query: string;
  /** The conversation whose private turns and people the query is cleaned of. */
  conversationId?: string;
  /** Results at most. Default: the `maxResults` option. */
  maxResults?: number;
}

/** What `memory.webSearch()` found. */
export interface WebSearchAnswer {
  report: SearchReport;
  /** The results as a model reads them: one `<web-results>` block through the one renderer, as data ('' when none). */
  text: string;
  results: { title: string; url: string; publishedAt?: string; provider: string; text: string }[];
}
