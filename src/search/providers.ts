/**
 * Search providers: the built-in ones as data (`searxng()`, `braveSearch()`, `tavily()`: plain objects that cross into
 * a worker), the `providers` option read into clients (resolveProviders), and one search across all of them at once
 * (askProviders): each timed and reported, results merged by URL and interleaved by rank. Never rejects.
 */
import { PagewiseError } from '../contracts/errors.js';
import type {
  BraveSearchOptions, SearchProvider, SearchProviderReport, SearchRequest, SearchResult, SearxngOptions, TavilyOptions,
} from '../contracts/types.js';
import { braveClient, cleanResult, SearchFailure, searxngClient, tavilyClient } from './provider-formats.js';

export { SearchFailure, type SearchFailureOutcome } from './provider-formats.js';

/**
 * A SearXNG instance's JSON API as a search provider (no key). JSON must be enabled in the instance's settings.yml
 * (`search: formats: [html, json]`).
 *
 * @example
 * const memory = await createMemory({
 *   search: { providers: [searxng({ url: 'https://searx.example.org', engines: ['duckduckgo', 'wikipedia'] })] },
 * });
 */
export function searxng(options: Omit<SearxngOptions, 'provider'>): SearxngOptions {
  return { ...options, provider: 'searxng' };
}

/**
 * The Brave Search API as a search provider (key sent in `X-Subscription-Token`).
 *
 * @example
 * const memory = await createMemory({
 *   search: { providers: [braveSearch({ apiKey: process.env.BRAVE_API_KEY ?? '', country: 'us' })] },
 * });
 */
export function braveSearch(options: Omit<BraveSearchOptions, 'provider'>): BraveSearchOptions {
  return { ...options, provider: 'brave' };
}

/**
 * Tavily's search API as a search provider (key sent as a bearer token).
 *
 * @example
 * const memory = await createMemory({
 *   search: { providers: [tavily({ apiKey: process.env.TAVILY_API_KEY ?? '', topic: 'news' })] },
 * });
 */
export function tavily(options: Omit<TavilyOptions, 'provider'>): TavilyOptions {
  return { ...options, provider: 'tavily' };
}

const EXAMPLE = "e.g. `providers: [searxng({ url: 'https://searx.example.org' })]`";
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function invalid(index: number, field: string | null, message: string): PagewiseError {
  const path = `search.providers[${index}]${field === null ? '' : `.${field}`}`;
  return new PagewiseError('INVALID_OPTIONS', 'search', `\`${path}\` ${message}`, { path });
}

/** A URL option: a string that parses as http(s) (never echoed: it may hold credentials). */
function checkUrl(item: Record<string, unknown>, index: number, field: string, required: boolean, example: string): string | undefined {
  const value = item[field];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.trim() === '') return fail(`must be a base URL (a non-empty string), ${example}`);
  let url: URL;
  try { url = new URL(value.trim()); } catch { return fail(`is not a URL: pass an absolute http(s) URL, ${example}`); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(`must be an http:// or https:// URL, ${example}`);
  return value.trim();
  function fail(message: string): never { throw invalid(index, field, message); }
}

function checkKey(item: Record<string, unknown>, index: number, example: string): string {
  const key = item.apiKey;
  if (typeof key !== 'string' || key.trim() === '') throw invalid(index, 'apiKey', `must be a non-empty string (your API key), ${example}`);
  return key.trim();
}

function checkEnum<T extends string>(item: Record<string, unknown>, index: number, field: string, allowed: readonly T[]): T | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value as T)) throw invalid(index, field, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}.`);
  return value as T;
}

function checkString(item: Record<string, unknown>, index: number, field: string, example: string): string | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw invalid(index, field, `must be a non-empty string, e.g. \`${field}: ${example}\`.`);
  return value.trim();
}

function checkList(item: Record<string, unknown>, index: number, field: string, example: string): string[] | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.trim() === '' || v.includes(','))) {
    throw invalid(index, field, `must be a list of names (non-empty strings without commas), e.g. \`${field}: ${example}\`.`);
  }
  return value.map((v: string) => v.trim());
}

function checkHeaders(item: Record<string, unknown>, index: number): Record<string, string> | undefined {
  const value = item.headers;
  if (value === undefined) return undefined;
  const entries = isObject(value) ? Object.entries(value) : null;
  if (entries === null || entries.some(([name, v]) => typeof v !== 'string' || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(name))) {
    throw invalid(index, 'headers', "must be an object of header names to string values, e.g. `headers: { authorization: 'Basic …' }`.");
  }
  return Object.fromEntries(entries as [string, string][]);
}

/** A built-in provider's data, checked and copied (later changes to the caller's object change nothing). */
function builtIn(item: Record<string, unknown>, index: number, name: string): SearchProvider {
  switch (item.provider) {
    case 'searxng': {
      const example = "e.g. `searxng({ url: 'https://searx.example.org' })`";
      const url = checkUrl(item, index, 'url', true, example)!;
      const options: SearxngOptions = { provider: 'searxng', url };
      const engines = checkList(item, index, 'engines', "['duckduckgo', 'wikipedia']");
      const categories = checkList(item, index, 'categories', "['general', 'news']");
      const language = checkString(item, index, 'language', "'en'");
      const headers = checkHeaders(item, index);
      if (engines) options.engines = engines;
      if (categories) options.categories = categories;
      if (language) options.language = language;
      if (headers) options.headers = headers;
      return searxngClient(options, name);
    }
    case 'brave': {
      const example = "e.g. `braveSearch({ apiKey: process.env.BRAVE_API_KEY })`";
      const options: BraveSearchOptions = { provider: 'brave', apiKey: checkKey(item, index, example) };
      const baseUrl = checkUrl(item, index, 'baseUrl', false, "e.g. `baseUrl: 'https://api.search.brave.com'`");
      const country = checkString(item, index, 'country', "'us'");
      const safesearch = checkEnum(item, index, 'safesearch', ['off', 'moderate', 'strict'] as const);
      if (baseUrl) options.baseUrl = baseUrl;
      if (country) options.country = country;
      if (safesearch) options.safesearch = safesearch;
      return braveClient(options, name);
    }
    case 'tavily': {
      const example = "e.g. `tavily({ apiKey: process.env.TAVILY_API_KEY })`";
      const options: TavilyOptions = { provider: 'tavily', apiKey: checkKey(item, index, example) };
      const baseUrl = checkUrl(item, index, 'baseUrl', false, "e.g. `baseUrl: 'https://api.tavily.com'`");
      const searchDepth = checkEnum(item, index, 'searchDepth', ['basic', 'advanced'] as const);
      const topic = checkEnum(item, index, 'topic', ['general', 'news'] as const);
      if (baseUrl) options.baseUrl = baseUrl;
      if (searchDepth) options.searchDepth = searchDepth;
      if (topic) options.topic = topic;
      return tavilyClient(options, name);
    }
    default: {
      const said = typeof item.provider === 'string' ? `'${item.provider.slice(0, 40)}'` : typeof item.provider;
      throw invalid(index, 'provider', `is ${said}, which is not a built-in provider: use searxng(), braveSearch() or tavily(), or your own \`{ name: 'mine', search: async (request) => [...] }\`.`);
    }
  }
}

/** One item of `providers` as a provider, or the error saying what is wrong with it. */
function providerAt(item: unknown, index: number): { provider: SearchProvider | null; name: string; data?: Record<string, unknown> } {
  if (typeof item === 'function') {
    const fn = item as (request: SearchRequest) => Promise<SearchResult[]>;
    const name = typeof fn.name === 'string' && fn.name.trim() !== '' ? fn.name.trim() : 'function';
    return { provider: { name, search: (request) => fn(request) }, name };
  }
  if (!isObject(item)) {
    throw invalid(index, null, `is ${item === null ? 'null' : typeof item}: pass a provider — searxng({ url }), braveSearch({ apiKey }), tavily({ apiKey }), an object \`{ name, search }\` or an async function — ${EXAMPLE}.`);
  }
  if (typeof item.search === 'function') {
    if (typeof item.name !== 'string' || item.name.trim() === '') {
      throw invalid(index, 'name', "must be a non-empty string naming your provider in the manifest, e.g. `{ name: 'intranet', search: async (request) => [...] }`.");
    }
    const own = item as unknown as SearchProvider;
    return { provider: { name: item.name.trim(), search: (request) => own.search(request) }, name: item.name.trim() };
  }
  if ('provider' in item) return { provider: null, name: typeof item.provider === 'string' ? item.provider : '', data: item };
  throw invalid(index, null, `is an object that is neither a built-in provider nor \`{ name, search }\`: ${EXAMPLE}, or \`{ name: 'mine', search: async (request) => [...] }\`.`);
}

/**
 * The `search.providers` option read into providers: built-in ones as their clients, your own as given, each named
 * (repeated names get `#2`, `#3`…). Anything else is INVALID_OPTIONS naming `search.providers[i]` (never a key).
 */
export function resolveProviders(list: unknown): SearchProvider[] {
  if (!Array.isArray(list) || list.length === 0) {
    throw new PagewiseError('INVALID_OPTIONS', 'search', `\`search.providers\` must be a non-empty list of providers, ${EXAMPLE}.`, { path: 'search.providers' });
  }
  const seen = new Map<string, number>();
  return list.map((item: unknown, index) => {
    const found = providerAt(item, index);
    const times = (seen.get(found.name) ?? 0) + 1;
    seen.set(found.name, times);
    const name = times === 1 ? found.name : `${found.name}#${times}`;
    if (found.data) return builtIn(found.data, index, name);
    return { name, search: found.provider!.search };
  });
}

/** A merged result and the provider that found it first. */
export type FoundResult = SearchResult & { provider: string };

/** The key two results share when they are the same page: lower-case host, no fragment, trailing slash or tracking. */
export function normalizeUrl(url: string): string {
  try {
    const u = new URL(url);
    u.hash = '';
    for (const name of [...u.searchParams.keys()]) {
      if (/^utm_/i.test(name) || /^(fbclid|gclid)$/i.test(name)) u.searchParams.delete(name);
    }
    u.searchParams.sort();
    const search = u.searchParams.toString();
    return `${u.protocol}//${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, '')}${search ? `?${search}` : ''}`;
  } catch {
    return url;
  }
}

/** Results by rank across providers (each one's first, then each one's second…), each page once, at most `max`. */
export function interleave(lists: { provider: string; results: SearchResult[] }[], max: number): FoundResult[] {
  const out: FoundResult[] = [];
  const seen = new Set<string>();
  const depth = Math.max(0, ...lists.map((l) => l.results.length));
  for (let rank = 0; rank < depth && out.length < max; rank++) {
    for (const list of lists) {
      const result = list.results[rank];
      if (!result) continue;
      const key = normalizeUrl(result.url);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ ...result, provider: list.provider });
      if (out.length >= max) break;
    }
  }
  return out;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** What a custom provider returned, checked like a built-in reply: a list, its bad items skipped. */
function checkedResults(value: unknown): SearchResult[] {
  if (!Array.isArray(value)) throw new SearchFailure('garbage', `returned ${value === null ? 'null' : typeof value}, not a list of results`);
  const results = value.filter(isObject).map((item) => cleanResult(item as Parameters<typeof cleanResult>[0])).filter((r): r is SearchResult => r !== undefined);
  if (value.length > 0 && results.length === 0) throw new SearchFailure('garbage', 'returned no result with an http(s) url');
  return results;
}

/**
 * Waits for `promise`, or rejects with the signal's reason as soon as it aborts: a provider (or an app's LLM) that
 * ignores its signal is not waited for.
 */
export function within<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) { onAbort(); return; }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then((v) => { signal.removeEventListener('abort', onAbort); resolve(v); }, (e: unknown) => { signal.removeEventListener('abort', onAbort); reject(e); });
  });
}

/** One provider asked, timed and reported; never rejects. */
async function askOne(provider: SearchProvider, request: SearchRequest): Promise<{ report: SearchProviderReport; results: SearchResult[] }> {
  const start = now();
  const ms = (): number => Math.max(0, Math.round(now() - start));
  const failed = (outcome: SearchProviderReport['outcome'], error: string) =>
    ({ report: { name: provider.name, outcome, results: 0, ms: ms(), error }, results: [] });
  if (request.signal.aborted) return failed('timeout', 'not asked: the deadline had passed');
  try {
    const answer = await within(Promise.resolve().then(() => provider.search(request)), request.signal);
    const results = checkedResults(answer);
    return { report: { name: provider.name, outcome: results.length > 0 ? 'ok' : 'empty', results: results.length, ms: ms() }, results };
  } catch (cause) {
    if (request.signal.aborted) return failed('timeout', abortedWhy(request.signal));
    if (cause instanceof SearchFailure) return failed(cause.outcome, oneLine(cause.message));
    const message = cause instanceof Error ? cause.message : String(cause);
    return failed('error', oneLine(message) || 'failed');
  }
}

/** Why the request's signal aborted: the search's own reason (its deadline, the memory closing), else the deadline. */
const abortedWhy = (signal: AbortSignal): string => (signal.reason instanceof Error && signal.reason.name === 'Error' && signal.reason.message ? oneLine(signal.reason.message) : 'no answer before the deadline');

/** An error's message as one short line: it is data, shown in reports and logs. */
export const oneLine = (message: string, max = 200) => message.replace(/\s+/g, ' ').trim().slice(0, max);

/**
 * Asks every provider at once with the request's deadline (its signal). Each gets a report (outcome, results, ms, why
 * it failed); the results are merged by URL and interleaved by rank, cut to `request.maxResults`. Never rejects.
 */
export async function askProviders(providers: SearchProvider[], request: SearchRequest): Promise<{ results: FoundResult[]; reports: SearchProviderReport[] }> {
  const settled = await Promise.allSettled(providers.map((p) => askOne(p, request)));
  const answers = settled.map((s, i) => (s.status === 'fulfilled'
    ? s.value
    : { report: { name: providers[i]!.name, outcome: 'error' as const, results: 0, ms: 0, error: 'failed' }, results: [] }));
  const lists = answers.map((a, i) => ({ provider: providers[i]!.name, results: a.results }));
  return { results: interleave(lists, Math.max(0, Math.floor(request.maxResults) || 0)), reports: answers.map((a) => a.report) };
}
