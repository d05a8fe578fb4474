import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isPagewiseError } from '../../../src/contracts/errors.js';
import type { SearchProvider, SearchRequest, SearchResult } from '../../../src/contracts/types.js';
import { htmlToText, pageText, privateHostReason } from '../../../src/search/pages.js';
import {
  askProviders, braveSearch, normalizeUrl, resolveProviders, SearchFailure, searxng, tavily,
} from '../../../src/search/providers.js';
import {
  PAGES, redirectPath, startSearchServers, TEST_KEY, type Mode, type SearchProviderKind, type SearchServers,
} from '../../support/search-servers.js';

let s: SearchServers;
beforeAll(async () => { s = await startSearchServers(); });
afterAll(() => s.close());
beforeEach(() => s.reset());

const open = (): AbortSignal => new AbortController().signal;
const request = (query: string, maxResults = 10, signal = open()): SearchRequest => ({ query, maxResults, signal });
const builtIn = (kind: SearchProviderKind, apiKey = TEST_KEY) => (kind === 'searxng'
  ? searxng({ url: s.searxngUrl }) : kind === 'brave' ? braveSearch({ apiKey, baseUrl: s.braveUrl }) : tavily({ apiKey, baseUrl: s.tavilyUrl }));
const params = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);
/** The PagewiseError `fn` throws. */
function thrown(fn: () => unknown): { code: string; path?: string; message: string } {
  try { fn(); } catch (error) { if (isPagewiseError(error)) return error; throw error; }
  throw new Error('did not throw');
}

describe('the built-in clients speak each real format', () => {
  it('SearXNG: GET /search with q, format=json, engines, categories, language and the configured headers; content becomes the snippet', async () => {
    const [provider] = resolveProviders([searxng({
      url: `${s.searxngUrl}/`, engines: ['duckduckgo', 'wikipedia'], categories: ['general', 'news'], language: 'en', headers: { 'x-proxy-auth': 'proxy-secret-42' },
    })]);
    const results = await provider!.search(request('node 24 release', 2));
    expect(s.queries).toHaveLength(1);
    const q = s.queries[0]!;
    expect(new URL(q.url, 'http://x').pathname).toBe('/searxng/search');
    expect(params(q.url)).toEqual({ q: 'node 24 release', format: 'json', engines: 'duckduckgo,wikipedia', categories: 'general,news', language: 'en' });
    expect(q.headers).toMatchObject({ accept: 'application/json', 'x-proxy-auth': 'proxy-secret-42' });
    expect(provider!.name).toBe('searxng');
    expect(results).toEqual([
      { title: PAGES.article.title, url: `${s.pagesUrl}${PAGES.article.path}`, snippet: PAGES.article.main[0], publishedAt: PAGES.article.publishedAt },
      { title: PAGES.docs.title, url: `${s.pagesUrl}${PAGES.docs.path}`, snippet: PAGES.docs.main[0] },
    ]);
  });

  it('Brave: GET /res/v1/web/search with count, country, safesearch and the key in X-Subscription-Token; markup stripped, extra snippets joined', async () => {
    s.results.brave = [
      { title: 'Node.js <strong>24.3.0</strong> &amp; more', url: 'https://news.example/node', snippet: 'Node.js <strong>24.3.0</strong> was released &mdash; &unknown; on 2026&#8209;11&#x2D;20 &lt;b&gt;',
        raw: { extra_snippets: ['Startup is <strong>18%</strong> faster.', 42], age: '2 days ago', page_age: '2026-11-20T09:30:00' } },
      { title: '', url: 'https://docs.example/fs', snippet: 'Docs', raw: { age: 'November 19, 2026' } },
      { title: 'Not http', url: 'javascript:alert(1)', snippet: 'x' },
    ];
    const [provider] = resolveProviders([braveSearch({ apiKey: TEST_KEY, baseUrl: s.braveUrl, country: 'us', safesearch: 'strict' })]);
    const results = await provider!.search(request('node 24', 5));
    const q = s.queries[0]!;
    expect(new URL(q.url, 'http://x').pathname).toBe('/brave/res/v1/web/search');
    expect(params(q.url)).toEqual({ q: 'node 24', count: '5', country: 'us', safesearch: 'strict' });
    expect(q.headers).toMatchObject({ accept: 'application/json', 'x-subscription-token': TEST_KEY });
    expect(results).toEqual([
      { title: 'Node.js 24.3.0 & more', url: 'https://news.example/node', snippet: 'Node.js 24.3.0 was released — &unknown; on 2026\u201111-20 <b> Startup is 18% faster.', publishedAt: '2026-11-20T09:30:00' },
      { title: 'https://docs.example/fs', url: 'https://docs.example/fs', snippet: 'Docs', publishedAt: 'November 19, 2026' },
    ]);
  });

  it('Tavily: POST /search with the key as a bearer token and its JSON body; raw_content becomes content', async () => {
    const [provider] = resolveProviders([tavily({ apiKey: TEST_KEY, baseUrl: s.tavilyUrl, searchDepth: 'advanced', topic: 'news' })]);
    const results = await provider!.search(request('node 24', 3));
    const q = s.queries[0]!;
    expect(q.url).toBe('/tavily/search');
    expect(q.headers).toMatchObject({ authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' });
    expect(q.body).toEqual({ query: 'node 24', max_results: 3, search_depth: 'advanced', topic: 'news', include_raw_content: false });
    expect(results).toEqual([
      { title: PAGES.article.title, url: `${s.pagesUrl}${PAGES.article.path}`, snippet: PAGES.article.main[0], publishedAt: PAGES.article.publishedAt, content: PAGES.article.main.join('\n\n') },
      { title: PAGES.docs.title, url: `${s.pagesUrl}${PAGES.docs.path}`, snippet: PAGES.docs.main[0] },
    ]);
  });

  it('defaults: Brave and Tavily ask their public hosts, basic depth, general topic', async () => {
    const [t] = resolveProviders([tavily({ apiKey: TEST_KEY, baseUrl: s.tavilyUrl })]);
    await t!.search(request('q', 50));
    expect(s.queries[0]!.body).toMatchObject({ max_results: 20, search_depth: 'basic', topic: 'general' });
  });
});

describe('each failure is an outcome, never a rejection', () => {
  const expected: Record<Exclude<Mode, 'ok' | 'hang'>, { outcome: string; error?: RegExp }> = {
    error: { outcome: 'error', error: /^HTTP 503$/ },
    refuse: { outcome: 'refused', error: /^refused the (key|request) \(HTTP (401|403|422)\)/ },
    garbage: { outcome: 'garbage', error: /^the reply was not (SearXNG|Brave Search|Tavily)'s JSON: / },
    empty: { outcome: 'empty' },
    huge: { outcome: 'garbage', error: /^the reply was larger than 2 MiB$/ },
  };
  for (const kind of ['searxng', 'brave', 'tavily'] as const) {
    for (const [mode, want] of Object.entries(expected)) {
      it(`${kind} answering ${mode} → ${want.outcome}`, async () => {
        s.mode[kind] = mode as Mode;
        const { results, reports } = await askProviders(resolveProviders([builtIn(kind)]), request('node 24'));
        expect(results).toEqual([]);
        expect(reports).toHaveLength(1);
        expect(reports[0]).toMatchObject({ name: kind, outcome: want.outcome, results: 0 });
        if (want.error) expect(reports[0]!.error).toMatch(want.error);
        else expect(reports[0]!.error).toBeUndefined();
        // Neither the key nor the body (which echoes the key and the query on 503) reaches the message.
        expect(reports[0]!.error ?? '').not.toMatch(new RegExp(`${TEST_KEY}|Unavailable|Unauthorized|SUBSCRIPTION|node 24`));
      });
    }

    it(`${kind} that never answers → timeout when the deadline aborts the request`, async () => {
      s.mode[kind] = 'hang';
      const deadline = new AbortController();
      const asked = askProviders(resolveProviders([builtIn(kind)]), request('node 24', 3, deadline.signal));
      await s.received(kind);
      deadline.abort();
      const { results, reports } = await asked;
      expect(results).toEqual([]);
      expect(reports[0]).toMatchObject({ name: kind, outcome: 'timeout', results: 0, error: 'no answer before the deadline' });
    });
  }

  it('a wrong key is refused, and the key never appears in the report', async () => {
    const key = 'sk-wrong-but-secret-0123456789';
    const { reports } = await askProviders(resolveProviders([builtIn('brave', key), builtIn('tavily', key)]), request('q'));
    expect(reports.map((r) => [r.outcome, r.error])).toEqual([
      ['refused', 'refused the key (HTTP 422): check apiKey (a Brave Search API subscription token)'],
      ['refused', 'refused the key (HTTP 401): check apiKey (a Tavily API key, tvly-…)'],
    ]);
    expect(s.queries.map((q) => q.headers['x-subscription-token'] ?? q.headers.authorization)).toEqual([key, `Bearer ${key}`]);
  });

  it('a redirect is not followed (a key must not travel to where it points)', async () => {
    const { reports } = await askProviders(resolveProviders([searxng({ url: s.redirectUrl }), braveSearch({ apiKey: TEST_KEY, baseUrl: s.redirectUrl })]), request('q'));
    expect(reports.map((r) => r.outcome)).toEqual(['error', 'error']);
    expect(reports[0]!.error).toMatch(/^answered with a redirect \(HTTP 301\), which is not followed/);
    expect(s.queries).toEqual([]);
  });

  it('an unreachable server is an error that says why', async () => {
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((ok) => closed.close(() => ok()));
    const { reports } = await askProviders(resolveProviders([searxng({ url: `http://127.0.0.1:${port}` })]), request('q'));
    expect(reports[0]).toMatchObject({ outcome: 'error' });
    expect(reports[0]!.error).toMatch(/^could not be reached \(.*ECONNREFUSED/);
  });
});

describe('askProviders', () => {
  it('asks all at once, interleaves by rank, keeps each page once (fragment, tracking, host case, trailing slash) and cuts to maxResults', async () => {
    const providers = resolveProviders([builtIn('searxng'), builtIn('brave'), builtIn('tavily')]);
    const { results, reports } = await askProviders(providers, request('node 24', 10));
    expect(reports.map((r) => [r.name, r.outcome, r.results])).toEqual([['searxng', 'ok', 3], ['brave', 'ok', 3], ['tavily', 'ok', 2]]);
    for (const r of reports) expect(r.ms).toBeGreaterThanOrEqual(0);
    const page = (p: string) => `${s.pagesUrl}${p}`;
    expect(results.map((r) => [r.provider, r.url])).toEqual([
      ['searxng', page(PAGES.article.path)],
      ['brave', `${page(PAGES.docs.path)}#readfile`],
      ['searxng', page(PAGES.hostile.path)],
      ['brave', page(PAGES.plain.path)],
    ]);
    expect(new Set(s.queries.map((q) => q.query))).toEqual(new Set(['node 24']));
    const cut = await askProviders(providers, request('node 24', 2));
    expect(cut.results.map((r) => r.provider)).toEqual(['searxng', 'brave']);
  });

  it('normalizes URLs for merging', () => {
    expect(normalizeUrl('HTTPS://Example.COM/a/?utm_source=x&b=1&fbclid=y&gclid=z&UTM_medium=m#frag')).toBe('https://example.com/a?b=1');
    expect(normalizeUrl('https://example.com/')).toBe(normalizeUrl('https://example.com'));
    expect(normalizeUrl('https://example.com/a?x=1&y=2')).toBe(normalizeUrl('https://example.com/a?y=2&x=1'));
    expect(normalizeUrl('https://example.com/a')).not.toBe(normalizeUrl('https://example.com/b'));
  });

  it('your own providers: results checked (bad items skipped), failures reported by kind, a thrown error cut to 200 characters', async () => {
    async function intranet(): Promise<SearchResult[]> {
      return [
        { title: '  Wiki\n page ', url: 'https://wiki.example/a', snippet: 'from\tthe wiki', content: 'Full text' },
        { title: 'bad', url: 'javascript:alert(1)', snippet: '' },
        'not an object' as unknown as SearchResult,
        { title: 'no url' } as unknown as SearchResult,
        { url: 'https://wiki.example/b' } as unknown as SearchResult,
      ];
    }
    const providers = resolveProviders([
      intranet,
      { name: 'thrower', search: async () => { throw new Error(`boom ${'x'.repeat(500)}`); } },
      { name: 'refuser', search: async () => { throw new SearchFailure('refused', 'refused the key (HTTP 401)'); } },
      { name: 'not-a-list', search: async () => ({ results: [] }) as unknown as SearchResult[] },
      { name: 'all-bad', search: async () => [{ url: 'ftp://x.example/' }] as SearchResult[] },
      { name: 'nothing', search: async () => [] },
      { name: 'sync-thrower', search: () => { throw new TypeError('not async'); } },
    ] as unknown[]);
    const { results, reports } = await askProviders(providers, request('q'));
    expect(results).toEqual([
      { title: 'Wiki page', url: 'https://wiki.example/a', snippet: 'from the wiki', content: 'Full text', provider: 'intranet' },
      { title: 'https://wiki.example/b', url: 'https://wiki.example/b', snippet: '', provider: 'intranet' },
    ]);
    expect(reports.map((r) => [r.name, r.outcome, r.results])).toEqual([
      ['intranet', 'ok', 2], ['thrower', 'error', 0], ['refuser', 'refused', 0], ['not-a-list', 'garbage', 0],
      ['all-bad', 'garbage', 0], ['nothing', 'empty', 0], ['sync-thrower', 'error', 0],
    ]);
    expect(reports[1]!.error).toHaveLength(200);
    expect(reports[2]!.error).toBe('refused the key (HTTP 401)');
    expect(reports[3]!.error).toBe('returned object, not a list of results');
    expect(reports[6]!.error).toBe('not async');
  });

  it('a provider that ignores the signal is a timeout at the deadline; an already passed deadline asks nobody', async () => {
    let started!: () => void;
    const asked = new Promise<void>((ok) => { started = ok; });
    const stuck: SearchProvider = { name: 'stuck', search: () => { started(); return new Promise<SearchResult[]>(() => undefined); } };
    const deadline = new AbortController();
    const pending = askProviders([stuck, ...resolveProviders([builtIn('searxng')])], request('q', 5, deadline.signal));
    await asked;
    await s.received('searxng');
    deadline.abort();
    const { results, reports } = await pending;
    expect(reports[0]).toMatchObject({ name: 'stuck', outcome: 'timeout' });
    expect(reports[1]!.outcome === 'ok' || reports[1]!.outcome === 'timeout').toBe(true);
    expect(results.every((r) => r.provider === 'searxng')).toBe(true);

    let calls = 0;
    const counted: SearchProvider = { name: 'counted', search: async () => { calls++; return []; } };
    const gone = new AbortController();
    gone.abort();
    const late = await askProviders([counted], request('q', 5, gone.signal));
    expect(late.reports[0]).toMatchObject({ outcome: 'timeout', error: 'not asked: the deadline had passed' });
    expect(calls).toBe(0);
  });
});

describe('resolveProviders', () => {
  const bad: [string, unknown, string, RegExp][] = [
    ['not a list', 'searxng', 'search.providers', /must be a non-empty list of providers, e\.g\. `providers: \[searxng/],
    ['an empty list', [], 'search.providers', /non-empty list/],
    ['null', [null], 'search.providers[0]', /is null: pass a provider/],
    ['a number', [searxng({ url: 'https://a.example' }), 42], 'search.providers[1]', /is number/],
    ['an unknown provider', [{ provider: 'bing' }], 'search.providers[0].provider', /'bing', which is not a built-in provider: use searxng\(\)/],
    ['an object of nothing', [{ url: 'https://a.example' }], 'search.providers[0]', /neither a built-in provider nor/],
    ['no url', [{ provider: 'searxng' }], 'search.providers[0].url', /must be a base URL .*e\.g\. `searxng\(\{ url:/],
    ['an ftp url', [searxng({ url: 'ftp://user:ftp-secret-pw@a.example' })], 'search.providers[0].url', /must be an http:\/\/ or https:\/\/ URL/],
    ['a relative url', [searxng({ url: '/searx' })], 'search.providers[0].url', /is not a URL: pass an absolute http\(s\) URL/],
    ['bad engines', [searxng({ url: 'https://a.example', engines: 'google' as unknown as string[] })], 'search.providers[0].engines', /must be a list of names/],
    ['bad headers', [searxng({ url: 'https://a.example', headers: { 'x-a': 1 as unknown as string } })], 'search.providers[0].headers', /header names to string values/],
    ['an empty key', [braveSearch({ apiKey: ' ' })], 'search.providers[0].apiKey', /non-empty string \(your API key\), e\.g\. `braveSearch/],
    ['a missing key', [{ provider: 'tavily' }], 'search.providers[0].apiKey', /e\.g\. `tavily\(\{ apiKey/],
    ['a bad base URL', [braveSearch({ apiKey: 'sk-secret-key-value-123', baseUrl: 'api.search.brave.com' })], 'search.providers[0].baseUrl', /is not a URL/],
    ['a bad safesearch', [braveSearch({ apiKey: 'sk-secret-key-value-123', safesearch: 'on' as 'off' })], 'search.providers[0].safesearch', /one of 'off', 'moderate', 'strict'/],
    ['a bad depth', [tavily({ apiKey: 'tvly-secret-key-value', searchDepth: 'deep' as 'basic' })], 'search.providers[0].searchDepth', /one of 'basic', 'advanced'/],
    ['a nameless provider', [{ search: async () => [] }], 'search.providers[0].name', /must be a non-empty string naming your provider/],
  ];
  for (const [what, list, path, message] of bad) {
    it(`refuses ${what} at ${path}`, () => {
      const error = thrown(() => resolveProviders(list));
      expect(error.code).toBe('INVALID_OPTIONS');
      expect(error.path).toBe(path);
      expect(error.message).toMatch(message);
      expect(error.message).toContain(`\`${path}\``);
      expect(error.message).not.toMatch(/secret/);
    });
  }

  it('names each provider once (#2 on repeats); data in, clients out, copies of the options', async () => {
    const named = async function wiki(): Promise<SearchResult[]> { return []; };
    const options = searxng({ url: s.searxngUrl });
    const providers = resolveProviders([options, searxng({ url: 'https://b.example' }), named, async () => [], { name: 'searxng', search: named }, named]);
    expect(providers.map((p) => p.name)).toEqual(['searxng', 'searxng#2', 'wiki', 'function', 'searxng#3', 'wiki#2']);
    options.url = 'https://elsewhere.example';
    await providers[0]!.search(request('q'));
    expect(s.queries).toHaveLength(1);
  });

  it('the factories return plain data that crosses a worker boundary', () => {
    const data = [searxng({ url: 'https://a.example', engines: ['x'] }), braveSearch({ apiKey: 'k' }), tavily({ apiKey: 'k', topic: 'news' })];
    expect(structuredClone(data)).toEqual([
      { provider: 'searxng', url: 'https://a.example', engines: ['x'] }, { provider: 'brave', apiKey: 'k' }, { provider: 'tavily', apiKey: 'k', topic: 'news' },
    ]);
  });
});

describe('pages', () => {
  const fetchPage = (path: string, maxBytes = 1 << 20, signal = open()) => pageText(`${s.pagesUrl}${path}`, { signal, allowPrivateHosts: true, maxBytes });

  it('a news article: its main text in paragraphs, title and date; navigation, cookie banner, aside, footer, scripts and styles gone', async () => {
    const page = await fetchPage(PAGES.article.path);
    for (const sentence of PAGES.article.main) expect(page.text).toContain(sentence);
    for (const chrome of PAGES.article.boilerplate) expect(page.text).not.toContain(chrome);
    expect(page.title).toBe(PAGES.article.title);
    expect(page.publishedAt).toBe(PAGES.article.publishedAt);
    expect(page.text.split('\n\n')).toHaveLength(PAGES.article.main.length);
    expect(page.text).not.toMatch(/ {2}|\n{3}|<|>/);
  });

  it('a docs page: the reference text without its sidebar, search box or footer', async () => {
    const page = await fetchPage(PAGES.docs.path);
    for (const sentence of PAGES.docs.main) expect(page.text).toContain(sentence);
    for (const chrome of PAGES.docs.boilerplate) expect(page.text).not.toContain(chrome);
    expect(page.text).toContain("import { readFile } from 'node:fs/promises';\nconst text");
    expect(page.title).toBe(PAGES.docs.title);
    expect(page.publishedAt).toBeUndefined();
  });

  it('a hostile page: its markup-like and instruction-like text is kept as text, its scripts are not', async () => {
    const page = await fetchPage(PAGES.hostile.path);
    for (const sentence of PAGES.hostile.main) expect(page.text).toContain(sentence);
    for (const text of PAGES.hostile.hostile) expect(page.text).toContain(text);
    for (const chrome of PAGES.hostile.boilerplate) expect(page.text).not.toContain(chrome);
  });

  it('plain text in paragraphs, a charset declared in the page; other types, errors and empty pages are refused with a short reason', async () => {
    expect((await fetchPage(PAGES.plain.path)).text).toBe(PAGES.plain.main.join('\n\n'));
    expect((await fetchPage(PAGES.latin1.path)).text).toBe(PAGES.latin1.main[0]);
    await expect(fetchPage(PAGES.pdf.path)).rejects.toThrow(/^not HTML \(application\/pdf\)$/);
    await expect(fetchPage(PAGES.missing.path)).rejects.toThrow(/^HTTP 404$/);
    await expect(fetchPage(PAGES.empty.path)).rejects.toThrow(/^no main text$/);
  });

  it('reads at most maxBytes and uses what came', async () => {
    const page = await fetchPage(PAGES.big.path, 64 * 1024);
    expect(page.text).toContain(PAGES.big.first);
    expect(page.text).not.toContain(PAGES.big.last);
    expect(page.text.length).toBeLessThan(64 * 1024);
    // Read whole, the page is still parsed only in its first 256 KiB once scripts and styles are gone
    // (parsing is synchronous work no deadline interrupts).
    const whole = (await fetchPage(PAGES.big.path, 8 * 1024 * 1024)).text;
    expect(whole).toContain(PAGES.big.first);
    expect(whole).not.toContain(PAGES.big.last);
    expect(whole.length).toBeGreaterThan(200 * 1024);
  });

  it('a page that does not answer fails as timed out when the signal aborts', async () => {
    const deadline = new AbortController();
    const pending = fetchPage(PAGES.hang.path, 1 << 20, deadline.signal);
    await s.received('pages');
    deadline.abort();
    await expect(pending).rejects.toThrow(/^timed out$/);
  });

  it('follows at most 3 redirects, each hop checked', async () => {
    const page = await fetchPage(redirectPath(3, PAGES.article.path));
    expect(page.text).toContain(PAGES.article.main[0]);
    expect(s.pageRequests).toHaveLength(4);
    s.reset();
    await expect(fetchPage(redirectPath(4, PAGES.article.path))).rejects.toThrow(/^more than 3 redirects$/);
    expect(s.pageRequests).not.toContain(PAGES.article.path);
    await expect(fetchPage(redirectPath(2, 'file:///etc/passwd'))).rejects.toThrow(/^refused: not http\(s\) \(file:\)$/);
    await expect(fetchPage(redirectPath(1, 'ftp://example.org/x'))).rejects.toThrow(/^refused: not http\(s\)/);
  });

  it('refuses private hosts unless allowPrivateHosts, before any request', async () => {
    const port = new URL(s.pagesUrl).port;
    const refused = (url: string) => pageText(url, { signal: open(), allowPrivateHosts: false, maxBytes: 1 << 20 });
    await expect(refused(`${s.pagesUrl}${PAGES.article.path}`)).rejects.toThrow('refused: private address 127.0.0.1 (fetchPages.allowPrivateHosts)');
    await expect(refused(`http://localhost:${port}${PAGES.article.path}`)).rejects.toThrow('refused: private host localhost (fetchPages.allowPrivateHosts)');
    await expect(refused(`http://[::ffff:127.0.0.1]:${port}/`)).rejects.toThrow('refused: private address ::ffff:7f00:1');
    await expect(refused(`http://2130706433:${port}/`)).rejects.toThrow('refused: private address 127.0.0.1');
    expect(s.pageRequests).toEqual([]);
    await expect(refused('javascript:alert(1)')).rejects.toThrow(/^refused: not http\(s\)/);
  });

  it('knows which hosts are private', () => {
    const priv = ['127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '[::1]', '[::]', '[fe80::1]', '[fd12:3456::1]', '[fc00::1]', '[::ffff:7f00:1]', '[::ffff:10.0.0.1]', '[::ffff:a9fe:a9fe]',
      '[64:ff9b::a00:1]', '[2002:c0a8:101::1]', '[ff02::1]', 'localhost', 'LOCALHOST.', 'api.localhost', 'printer.local', 'metadata.google.internal', 'router', 'nas.home.arpa'];
    const pub = ['example.org', '8.8.8.8', '172.32.0.1', '100.128.0.1', '[2606:4700:4700::1111]', '[::ffff:8.8.8.8]', '[64:ff9b::808:808]', 'local.example.com'];
    expect(priv.filter((h) => privateHostReason(h) === undefined)).toEqual([]);
    expect(pub.filter((h) => privateHostReason(h) !== undefined)).toEqual([]);
  });

  it('htmlToText: the body when Readability finds no article, <time datetime> as the date, paragraphs kept', async () => {
    const tiny = await htmlToText('<html><head><title> A  tiny page </title></head><body><nav>Menu</nav><div>Only a short line.</div><footer>Foot</footer></body></html>', 'https://a.example/');
    expect(tiny).toEqual({ text: 'Only a short line.', title: 'A tiny page' });
    const dated = await htmlToText(`<html><body><header><time datetime="2020-01-01">site clock</time></header><article><h2>Report</h2>
      <time datetime="2025-01-02T03:04:05Z">2 January</time><p>${'First paragraph with enough words to read as an article. '.repeat(6)}</p>
      <p>Second   paragraph,\n spread over   lines.</p></article></body></html>`, 'https://a.example/');
    expect(dated.publishedAt).toBe('2025-01-02T03:04:05Z');
    expect(dated.text).toMatch(/article\.\n\nSecond paragraph, spread over lines\.$/);
  });

  it('loads linkedom and Readability lazily and imports nothing from Node (so it runs in workerd)', async () => {
    const source = readFileSync(resolve(import.meta.dirname, '../../../src/search/pages.ts'), 'utf8');
    expect(source).not.toMatch(/^import .*(linkedom|readability)/m);
    const out = await build({
      entryPoints: [resolve(import.meta.dirname, '../../../src/search/pages.ts'), resolve(import.meta.dirname, '../../../src/search/providers.ts')],
      bundle: true, format: 'esm', platform: 'neutral', write: false, outdir: 'out', metafile: true, logLevel: 'silent',
      mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
    });
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs.some((i) => i.includes('linkedom/worker.js'))).toBe(true);
    expect(inputs.filter((i) => i.startsWith('node:') || /^(fs|path|http|https|net|url|crypto|buffer|stream)$/.test(i))).toEqual([]);
  });
});
