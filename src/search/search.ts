// External search (seed 004's first strategy): per request, decide; build the query from the new message alone,
// anonymized; ask every provider at once under one deadline (or reuse a fresh answer); fetch the pages and keep their
// main text. Nothing here can fail a request: every failure becomes the report's words.
import { Lru } from '../common/cache.js';
import type { DroppedEntry, LlmProvider, ManifestEntry, SearchProviderReport, SearchReport, SearchResult, SearchResultReport, SearchStats, Tokenizer, WebSearchAnswer } from '../contracts/types.js';
import type { WebResultText } from '../text/render.js';
import { renderWebResult, renderWebResults } from '../text/render.js';
import { stemsOf } from '../text/fts-words.js';
import { quote } from '../assembly/passages.js';
import { type Decision, decide } from './decide.js';
import type { ResolvedSearch } from './options.js';
import { pageText } from './pages.js';
import { askProviders, oneLine, within } from './providers.js';
import { type MemoryLookup, buildQuery } from './query.js';
import { SearchCounters } from './stats.js';

/** A search step's outcome: its report (results not yet marked placed) and the results' texts, best first. */
export interface Searched {
  report: SearchReport;
  items: WebResultText[];
}

export interface Search {
  /** The search step of one request. Never rejects. */
  forMessage(c: { conversationId: string; text: string; isPrivate: boolean; requested: boolean | undefined }, lookup: MemoryLookup, failed?: AbortSignal): Promise<Searched>;
  /** After assembly: the report with what was placed (and its tokens), counted in the statistics. */
  placed(searched: Searched, manifest: readonly ManifestEntry[], dropped: readonly DroppedEntry[], budget: number): SearchReport;
  /** A search asked for directly (`memory.webSearch`): the query anonymized, the results cut to `perResult` tokens each. */
  direct(query: string, maxResults: number, lookup: MemoryLookup, tokenizer: Tokenizer, conversationId?: string): Promise<WebSearchAnswer>;
  stats(): SearchStats;
}

// Characters of a page's text kept before it is cut around the question (a long page is mostly not about it).
const MAX_TEXT = 40_000;
// Tokens of one result in a direct search's answer.
const DIRECT_TOKENS = 600;
const CACHED_QUERIES = 256;

interface Fetched {
  results: (SearchResult & { provider: string })[];
  providers: SearchProviderReport[];
  texts: { text: string; source: SearchResultReport['text']; pageError?: string }[];
}

/**
 * One deadline for a search step — the decision, the query, the providers and the pages together: aborted after `ms`,
 * when the memory closes, or when the request it serves fails (`also`). Its reason says which.
 */
function deadline(ms: number, closing: AbortSignal, also?: AbortSignal): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`timed out after ${ms} ms`)), ms);
  const outers: [AbortSignal, string][] = [[closing, 'the memory was closing'], ...(also ? [[also, 'the request failed'] as [AbortSignal, string]] : [])];
  const listeners = outers.map(([signal, why]) => {
    const on = () => controller.abort(new Error(why));
    if (signal.aborted) on();
    else signal.addEventListener('abort', on, { once: true });
    return () => signal.removeEventListener('abort', on);
  });
  return { signal: controller.signal, done: () => { clearTimeout(timer); listeners.forEach((off) => off()); } };
}


/** The report and items of a search that went out (or came from the cache). */
function searched(decision: Decision, query: string, removed: SearchReport['removed'], started: number, got: { fetched: Fetched; cached: boolean }): Searched {
  const { fetched, cached } = got;
  const results: SearchResultReport[] = fetched.results.map((r, i) => ({
    title: r.title, url: r.url, ...(r.publishedAt ? { publishedAt: r.publishedAt } : {}), provider: r.provider, text: fetched.texts[i]!.source,
    ...(fetched.texts[i]!.pageError ? { pageError: fetched.texts[i]!.pageError } : {}), included: false, tokens: 0,
  }));
  const items = fetched.results.map((r, i): WebResultText => ({ title: r.title, url: r.url, provider: r.provider, ...(r.publishedAt ? { publishedAt: r.publishedAt } : {}), text: fetched.texts[i]!.text }))
    .filter((it) => it.text.trim() !== '');
  const failed = fetched.providers.filter((p) => p.outcome !== 'ok' && p.outcome !== 'empty');
  const outcome: SearchReport['outcome'] = items.length > 0 ? 'searched' : failed.length === fetched.providers.length && !cached ? 'failed' : 'empty';
  const why = failed.map((p) => `${p.name}: ${p.error ?? p.outcome}`).join('; ');
  const reason = outcome === 'searched' ? `${decision.detail}; ${items.length} result(s)${cached ? ' from the cache' : ''}${why ? ` (${why})` : ''}`
    : outcome === 'failed' ? `${decision.detail}; every provider failed (${why}): answered from memory`
    : `${decision.detail}; no results${why ? ` (${why})` : ''}: answered from memory`;
  const report: SearchReport = {
    outcome, trigger: { by: decision.by, detail: decision.detail }, reason, query, ...(removed && Object.keys(removed).length > 0 ? { removed } : {}),
    ...(cached ? { cached: true } : {}), ms: Date.now() - started, providers: cached ? [] : fetched.providers, results,
  };
  return { report, items };
}

function skipped(decision: Decision, started: number, extra: Partial<SearchReport> = {}): Searched {
  return {
    report: { outcome: 'skipped', trigger: { by: decision.by, detail: decision.detail }, reason: `not searched: ${decision.detail}`, ms: Date.now() - started, providers: [], results: [], ...extra },
    items: [],
  };
}

export function createSearch(options: ResolvedSearch, llm: LlmProvider | undefined, closing: AbortSignal): Search {
  const counters = new SearchCounters(true);
  const cache = new Lru<string, { at: number; fetched: Fetched }>(CACHED_QUERIES);

  /** Every provider at once, then every result's page, all before `signal`'s deadline. */
  async function fetchAll(query: string, maxResults: number, signal: AbortSignal): Promise<Fetched> {
    const { results, reports } = await askProviders(options.providers, { query, maxResults, signal });
    const texts = await Promise.all(results.map(async (r) => {
      if (typeof r.content === 'string' && r.content.trim() !== '') return { text: r.content.slice(0, MAX_TEXT), source: 'provider' as const };
      if (!options.fetchPages) return { text: r.snippet, source: 'snippet' as const };
      try {
        const page = await pageText(r.url, { signal, ...options.fetchPages });
        return { text: page.text.slice(0, MAX_TEXT), source: 'page' as const };
      } catch (error) {
        const why = signal.aborted ? 'timed out' : String((error as Error)?.message ?? error).slice(0, 160);
        return { text: r.snippet, source: 'snippet' as const, pageError: why };
      }
    }));
    return { results, providers: reports, texts };
  }

  /**
   * The query's answer: fresh from the cache, or fetched (and cached unless every provider failed). The cache is the
   * conversation's own: on a memory that serves several people (the proxy) a cached answer must not tell one of them
   * what another asked.
   */
  async function answer(scope: string, query: string, maxResults: number, signal: AbortSignal): Promise<{ fetched: Fetched; cached: boolean }> {
    const key = JSON.stringify([scope, maxResults, query]);
    const hit = cache.get(key);
    if (hit && options.cacheMs > 0 && Date.now() - hit.at < options.cacheMs) return { fetched: hit.fetched, cached: true };
    const fetched = await fetchAll(query, maxResults, signal);
    if (options.cacheMs > 0 && fetched.providers.some((p) => p.outcome === 'ok' || p.outcome === 'empty')) cache.set(key, { at: Date.now(), fetched });
    return { fetched, cached: false };
  }

  return {
    async forMessage(c, lookup, failed) {
      const started = Date.now();
      const d = deadline(options.timeoutMs, closing, failed);
      const why = (error: unknown) => oneLine(String((error as Error)?.message ?? error), 160);
      try {
        let decision: Decision;
        try {
          decision = await within(decide(options, llm, c, lookup, d.signal), d.signal);
        } catch (error) {
          decision = { search: false, by: 'none', detail: `the decision failed (${why(error)})` };
        }
        if (!decision.search) return skipped(decision, started);
        try {
          const { query, removed } = await within(buildQuery(c.text, lookup, options.anonymize), d.signal);
          if (query === '') return skipped({ ...decision, detail: `${decision.detail}, but nothing was left to search for once private and personal words were taken out` }, started, Object.keys(removed).length > 0 ? { removed } : {});
          return searched(decision, query, removed, started, await answer(c.conversationId, query, options.maxResults, d.signal));
        } catch (error) {
          const r = skipped({ ...decision, detail: `${decision.detail}; the search failed (${why(error)})` }, started);
          return { ...r, report: { ...r.report, outcome: 'failed', reason: `${r.report.trigger.detail}: answered from memory` } };
        }
      } finally {
        d.done();
      }
    },

    placed(s, manifest, dropped, budget) {
      const report: SearchReport = { ...s.report, ...(s.items.length > 0 ? { budget } : {}), results: s.report.results.map((r) => ({ ...r })) };
      for (const e of manifest) {
        if (e.kind !== 'search' || !e.web) continue;
        const r = report.results.find((x) => x.url === e.web!.url);
        if (r) { r.included = true; r.tokens = e.tokens; }
      }
      for (const e of dropped) {
        if (e.kind !== 'search' || !e.web) continue;
        const r = report.results.find((x) => x.url === e.web!.url);
        if (r) r.tokens = e.tokens;
      }
      const placedCount = report.results.filter((r) => r.included).length;
      if (report.outcome === 'searched' && placedCount === 0) report.reason = `${report.reason}; none fit the memory budget`;
      counters.record(report, true);
      counters.placedResults(placedCount);
      return report;
    },

    async direct(text, maxResults, lookup, tokenizer, conversationId) {
      // Without a conversation, a cache of its own ('' is no conversation id).
      const scope = conversationId ?? '';
      const started = Date.now();
      const decision: Decision = { search: true, by: 'request', detail: 'asked for directly (webSearch)' };
      const { query, removed } = await buildQuery(text, lookup, options.anonymize);
      const d = deadline(options.timeoutMs, closing);
      let s: Searched;
      try {
        s = query === '' ? skipped({ ...decision, search: false, detail: 'nothing was left to search for once private and personal words were taken out' }, started, Object.keys(removed).length > 0 ? { removed } : {})
          : searched(decision, query, removed, started, await answer(scope, query, maxResults, d.signal));
      } finally {
        d.done();
      }
      const focus = stemsOf(text);
      const results = s.items.map((it) => ({ ...it, text: quote(it.text, focus, DIRECT_TOKENS, tokenizer).text }));
      const blocks = results.map(renderWebResult);
      s.report.results.forEach((r) => {
        const i = results.findIndex((x) => x.url === r.url);
        if (i >= 0) { r.included = true; r.tokens = tokenizer.count(blocks[i]!); }
      });
      counters.record(s.report, false);
      counters.placedResults(results.length);
      return { report: s.report, text: renderWebResults(blocks), results: results.map(({ title, url, publishedAt, provider, text: t }) => ({ title, url, ...(publishedAt ? { publishedAt } : {}), provider, text: t })) };
    },

    stats: () => counters.stats(),
  };
}

/** `memory.stats().search` of a memory without the option. */
export function searchOff(): SearchStats {
  return new SearchCounters(false).stats();
}
