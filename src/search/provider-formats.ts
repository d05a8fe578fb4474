/**
 * The built-in search clients over `fetch` (Node 22, browsers, workerd): SearXNG's JSON API, Brave's web search and
 * Tavily's search, each the real wire format, and what their replies become (SearchResult: plain text, http(s) URLs
 * only). A failure is a SearchFailure whose outcome the manifest reports; its message holds no key and no reply body.
 */
import type { BraveSearchOptions, SearchProvider, SearchRequest, SearchResult, SearxngOptions, TavilyOptions } from '../contracts/types.js';
import { MIN_SECRET_LENGTH, redact, secretsOf } from '../text/redact.js';

/** Why a provider gave nothing: the outcome its report shows. */
export type SearchFailureOutcome = 'timeout' | 'refused' | 'error' | 'garbage';

/**
 * A provider's failure, thrown by the built-in clients (and by your own provider, to say which outcome its report
 * shows): `timeout` (the deadline passed), `refused` (the key or the request was refused), `error` (HTTP or network),
 * `garbage` (a reply that is not the provider's format). Any other error thrown by a provider reports as `error`.
 */
export class SearchFailure extends Error {
  override readonly name = 'SearchFailure';
  readonly outcome: SearchFailureOutcome;

  constructor(outcome: SearchFailureOutcome, message: string) {
    super(message);
    this.outcome = outcome;
  }
}

/** The most a provider's reply may hold; a larger one is `garbage`, not an out-of-memory. */
export const MAX_REPLY_BYTES = 2 * 1024 * 1024;
/** What an error reply is read for (Brave says why it refused in its body). */
const MAX_ERROR_BYTES = 4096;
const BRAVE_BASE = 'https://api.search.brave.com';
const TAVILY_BASE = 'https://api.tavily.com';
/** Brave's and Tavily's most results per request. */
const MAX_COUNT = 20;

/**
 * A body's first `max` bytes; `over` says there was more (then the rest is not read: the stream is cancelled).
 * Rejects as reading does (an abort, a connection cut).
 */
export async function readCapped(res: Response, max: number): Promise<{ bytes: Uint8Array; over: boolean }> {
  if (!res.body) {
    const all = new Uint8Array(await res.arrayBuffer());
    return all.byteLength > max ? { bytes: all.subarray(0, max), over: true } : { bytes: all, over: false };
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let over = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > max) {
      chunks.push(value.subarray(0, max - total));
      total = max;
      over = true;
      reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    total += value.byteLength;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) { bytes.set(chunk, at); at += chunk.byteLength; }
  return { bytes, over };
}

/** A network error in a few words (`fetch failed: ECONNREFUSED`), never a URL's credentials (redacted by the caller). */
export function describeCause(cause: unknown): string {
  const error = cause as { message?: unknown; cause?: { code?: unknown; message?: unknown } } | undefined;
  const message = typeof error?.message === 'string' ? error.message : String(cause);
  const inner = error?.cause?.code ?? error?.cause?.message;
  // Cut by whoever shows it, after secrets are taken out (a key cut in half would no longer be found).
  return `${message}${typeof inner === 'string' && inner !== message ? `: ${inner}` : ''}`.slice(0, 4000);
}

/** How a provider reads an HTTP status that is not 2xx. */
type Refusal = (status: number, body: string) => string | undefined;

interface Ask {
  /** The provider's name in messages (`SearXNG`). */
  label: string;
  url: string;
  init: RequestInit;
  signal: AbortSignal;
  /** What must never appear in a message: keys, header values, URL credentials. */
  secrets: string[];
  /** The message for a refusal (401/403, Brave's 422), or undefined when the status is not one. */
  refused: Refusal;
}

const cancel = (res: Response): void => { res.body?.cancel().catch(() => undefined); };

/** One request and its JSON reply; every way it can fail is a SearchFailure. Redirects are never followed. */
async function askJson(ask: Ask): Promise<unknown> {
  const fail = (outcome: SearchFailureOutcome, message: string): SearchFailure => new SearchFailure(outcome, redact(message, ask.secrets).slice(0, 200));
  const broken = (cause: unknown): SearchFailure => ask.signal.aborted
    ? fail('timeout', 'no answer before the deadline')
    : fail('error', `could not be reached (${describeCause(cause)})`);
  let res: Response;
  try {
    res = await fetch(ask.url, { ...ask.init, signal: ask.signal, redirect: 'manual' });
  } catch (cause) {
    throw broken(cause);
  }
  if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
    cancel(res);
    throw fail('error', `answered with a redirect (HTTP ${res.status || 'opaque'}), which is not followed: configure the address it leads to`);
  }
  if (!res.ok) {
    let body = '';
    try { body = new TextDecoder().decode((await readCapped(res, MAX_ERROR_BYTES)).bytes); } catch (cause) { if (ask.signal.aborted) throw broken(cause); }
    const refusal = ask.refused(res.status, body);
    if (refusal !== undefined) throw fail('refused', refusal);
    throw fail('error', `HTTP ${res.status}${res.status === 429 ? ' (too many requests)' : ''}`);
  }
  let reply: { bytes: Uint8Array; over: boolean };
  try {
    reply = await readCapped(res, MAX_REPLY_BYTES);
  } catch (cause) {
    throw ask.signal.aborted ? broken(cause) : fail('error', `broke off its reply (${describeCause(cause)})`);
  }
  if (reply.over) throw fail('garbage', `the reply was larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB`);
  try {
    return JSON.parse(new TextDecoder().decode(reply.bytes)) as unknown;
  } catch {
    const type = (res.headers.get('content-type') ?? 'no content type').split(';')[0]!.trim().slice(0, 60);
    throw fail('garbage', `the reply was not ${ask.label}'s JSON: it does not parse (${type})`);
  }
}

const HTTP_STATUS_REFUSED = (what: string, fix: string): Refusal => (status) =>
  status === 401 || status === 403 ? `refused ${what} (HTTP ${status}): ${fix}` : undefined;

const ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', lsquo: '‘', rsquo: '’',
  ldquo: '“', rdquo: '”', laquo: '«', raquo: '»', middot: '·', bull: '•', copy: '©', reg: '®', trade: '™', deg: '°', euro: '€',
};

/** Markup taken out and entities decoded (Brave's `<strong>` highlights), whitespace collapsed. */
export function plainText(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, (entity, name: string) => {
      if (name[0] !== '#') return ENTITIES[name.toLowerCase()] ?? entity;
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : entity;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

const collapse = (s: string): string => s.replace(/\s+/g, ' ').trim();
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);

/** An http(s) URL, as parsed; undefined for anything else (javascript:, relative, unparsable). */
export function httpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** One result made safe: http(s) URL, plain-text strings, title defaulting to the URL. Undefined: skipped. */
export function cleanResult(raw: { url: unknown; title?: unknown; snippet?: unknown; publishedAt?: unknown; content?: unknown }): SearchResult | undefined {
  const url = httpUrl(raw.url);
  if (url === undefined) return undefined;
  const result: SearchResult = { title: collapse(str(raw.title) ?? '') || url, url, snippet: collapse(str(raw.snippet) ?? '') };
  const published = str(raw.publishedAt);
  if (published !== undefined) result.publishedAt = collapse(published).slice(0, 100);
  const content = str(raw.content);
  if (content !== undefined) result.content = content;
  return result;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A provider's result list mapped and cleaned. A list that is not an array, or whose items all lack a string `url`,
 * is not the provider's format (`garbage`); single bad items in a good list are skipped.
 */
export function resultsOf(label: string, list: unknown, map: (item: Record<string, unknown>) => Parameters<typeof cleanResult>[0]): SearchResult[] {
  if (!Array.isArray(list)) throw new SearchFailure('garbage', `the reply was not ${label}'s JSON: its results are not a list`);
  const shaped = list.filter((item): item is Record<string, unknown> => isObject(item) && typeof item.url === 'string');
  if (list.length > 0 && shaped.length === 0) throw new SearchFailure('garbage', `the reply was not ${label}'s JSON: no result has a url`);
  return shaped.map((item) => cleanResult(map(item))).filter((r): r is SearchResult => r !== undefined);
}

const base = (url: string): string => url.replace(/\/+$/, '');
const count = (n: number): number => Math.min(MAX_COUNT, Math.max(1, Math.floor(n) || 1));
/** Secrets of a request: credential headers and URL credentials, and every header value long enough to be one. */
const secretsFor = (url: string, headers: Record<string, string>, extra: string[] = []): string[] =>
  [...new Set([...secretsOf({ url, headers }), ...Object.values(headers), ...extra].filter((s) => s.length >= MIN_SECRET_LENGTH))];

/** SearXNG: `GET {url}/search?q=…&format=json` (JSON must be enabled in the instance's settings). */
export function searxngClient(options: SearxngOptions, name: string): SearchProvider {
  return {
    name,
    async search(request: SearchRequest): Promise<SearchResult[]> {
      const url = new URL(`${base(options.url)}/search`);
      url.searchParams.set('q', request.query);
      url.searchParams.set('format', 'json');
      if (options.engines?.length) url.searchParams.set('engines', options.engines.join(','));
      if (options.categories?.length) url.searchParams.set('categories', options.categories.join(','));
      if (options.language) url.searchParams.set('language', options.language);
      const headers = { accept: 'application/json', ...options.headers };
      const reply = await askJson({
        label: 'SearXNG', url: url.href, init: { method: 'GET', headers }, signal: request.signal, secrets: secretsFor(url.href, headers),
        refused: HTTP_STATUS_REFUSED('the request', "enable JSON in the instance's settings.yml (search: formats: [html, json]) and check `headers`"),
      });
      if (!isObject(reply)) throw new SearchFailure('garbage', "the reply was not SearXNG's JSON: not an object");
      return resultsOf('SearXNG', reply.results, (r) => ({ url: r.url, title: r.title, snippet: r.content, publishedAt: r.publishedDate }))
        .slice(0, Math.max(0, request.maxResults));
    },
  };
}

/** Brave says a bad key with HTTP 422 and `SUBSCRIPTION_TOKEN_INVALID` (401/403 elsewhere). */
const braveRefused: Refusal = (status, body) => {
  if (status === 401 || status === 403 || (status === 422 && /SUBSCRIPTION_TOKEN_INVALID|"component"\s*:\s*"authentication"/.test(body))) {
    return `refused the key (HTTP ${status}): check apiKey (a Brave Search API subscription token)`;
  }
  return undefined;
};

/** Brave Search: `GET {baseUrl}/res/v1/web/search?q=…&count=N`, key in `X-Subscription-Token`. */
export function braveClient(options: BraveSearchOptions, name: string): SearchProvider {
  return {
    name,
    async search(request: SearchRequest): Promise<SearchResult[]> {
      const url = new URL(`${base(options.baseUrl ?? BRAVE_BASE)}/res/v1/web/search`);
      url.searchParams.set('q', request.query);
      url.searchParams.set('count', String(count(request.maxResults)));
      if (options.country) url.searchParams.set('country', options.country);
      if (options.safesearch) url.searchParams.set('safesearch', options.safesearch);
      const headers = { accept: 'application/json', 'x-subscription-token': options.apiKey };
      const reply = await askJson({
        label: 'Brave Search', url: url.href, init: { method: 'GET', headers }, signal: request.signal,
        secrets: secretsFor(url.href, headers, [options.apiKey]), refused: braveRefused,
      });
      if (!isObject(reply)) throw new SearchFailure('garbage', "the reply was not Brave Search's JSON: not an object");
      if (reply.web === undefined || reply.web === null) return [];
      if (!isObject(reply.web)) throw new SearchFailure('garbage', "the reply was not Brave Search's JSON: `web` is not an object");
      return resultsOf('Brave Search', reply.web.results, (r) => {
        const extra = Array.isArray(r.extra_snippets) ? r.extra_snippets.filter((s): s is string => typeof s === 'string') : [];
        const snippet = [typeof r.description === 'string' ? r.description : '', ...extra].map(plainText).filter(Boolean).join(' ');
        return { url: r.url, title: typeof r.title === 'string' ? plainText(r.title) : undefined, snippet, publishedAt: str(r.page_age) ?? r.age };
      }).slice(0, Math.max(0, request.maxResults));
    },
  };
}

/** Tavily: `POST {baseUrl}/search` with JSON, key as a bearer token. */
export function tavilyClient(options: TavilyOptions, name: string): SearchProvider {
  return {
    name,
    async search(request: SearchRequest): Promise<SearchResult[]> {
      const url = `${base(options.baseUrl ?? TAVILY_BASE)}/search`;
      const headers = { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` };
      const body = JSON.stringify({
        query: request.query, max_results: count(request.maxResults), search_depth: options.searchDepth ?? 'basic',
        topic: options.topic ?? 'general', include_raw_content: false,
      });
      const reply = await askJson({
        label: 'Tavily', url, init: { method: 'POST', headers, body }, signal: request.signal, secrets: secretsFor(url, headers, [options.apiKey]),
        refused: HTTP_STATUS_REFUSED('the key', 'check apiKey (a Tavily API key, tvly-…)'),
      });
      if (!isObject(reply)) throw new SearchFailure('garbage', "the reply was not Tavily's JSON: not an object");
      return resultsOf('Tavily', reply.results, (r) => ({
        url: r.url, title: r.title, snippet: r.content, publishedAt: r.published_date, content: r.raw_content,
      })).slice(0, Math.max(0, request.maxResults));
    },
  };
}
