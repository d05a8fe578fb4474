// External search at the edge, in real workerd (Miniflare 4): a PagewiseMemory whose options(env) turn search on,
// reached over Workers RPC (memoryStub), and memoryProxy in front of it. workerd's fetch reaches the test's local
// servers on 127.0.0.1 directly (no outboundService or fetchMock needed), so the search providers speak their real
// formats (tests/support/search-servers.ts) and the pages are fetched and read inside the Durable Object.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AssembledContext, MemoryStats, WebSearchAnswer } from '../../../src/contracts/types.js';
import { PAGES, startSearchServers, TEST_KEY, type SearchServers } from '../../support/search-servers.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';

let mf: Miniflare;
let s: SearchServers;
let up: Upstream;
const dir = mkdtempSync(join(tmpdir(), 'pagewise-edge-search-'));
const UPSTREAM_KEY = 'sk-upstream-secret';
const QUESTION = "what's the latest Node.js release?";

beforeAll(async () => {
  [s, up] = await Promise.all([startSearchServers(), startUpstream()]);
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, '../../support/edge/search-worker.ts')], bundle: true, format: 'esm', platform: 'neutral',
    target: 'es2022', write: false, external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
  });
  const script = join(dir, 'search-worker.mjs');
  writeFileSync(script, out.outputFiles[0]!.text);
  mf = new Miniflare({
    modulesRoot: dir, modules: [{ type: 'ESModule', path: script, contents: out.outputFiles[0]!.text }], compatibilityDate: '2025-09-01',
    durableObjects: { SEARCH_MEMORY: { className: 'SearchMemory', useSQLite: true } },
    durableObjectsPersist: join(dir, 'do'),
    bindings: { SEARXNG_URL: s.searxngUrl, TAVILY_URL: s.tavilyUrl, TAVILY_KEY: TEST_KEY, UPSTREAM: up.base, UPSTREAM_KEY },
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  await Promise.all([s?.close(), up?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => { s.reset(); up.next.length = 0; up.seen.length = 0; });

type Outcome<T> = { value?: T; error?: { name?: string; code?: string; message?: string } };
/** A Memory method on a conversation's object, over RPC (the Worker's memoryStub). */
const call = async <T>(object: string, method: string, ...args: unknown[]): Promise<Outcome<T>> =>
  (await mf.dispatchFetch(`http://edge.test/call/${encodeURIComponent(object)}/${method}`, { method: 'POST', body: JSON.stringify(args) })).json() as Promise<Outcome<T>>;
const inbound = (object: string, content: string) => call<AssembledContext>(object, 'onMessageInbound', { conversationId: object, message: { role: 'user', content } });

describe('PagewiseMemory with search, over Workers RPC', () => {
  it('a message with a trigger word is searched: the web results first in recallText, the page\'s main text, the report in the manifest', async () => {
    const got = await inbound('s1', QUESTION);
    expect(got.error).toBeUndefined();
    const ctx = got.value!;
    expect(ctx.search).toMatchObject({ outcome: 'searched', trigger: { by: 'keyword' } });
    expect(ctx.search!.providers.map((p) => [p.name, p.outcome]).sort()).toEqual([['searxng', 'ok'], ['tavily', 'ok']]);
    // The query as each provider received it is the report's.
    expect(s.queries.map((q) => q.query)).toEqual([ctx.search!.query, ctx.search!.query]);
    expect(s.queries.find((q) => q.provider === 'tavily')!.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    // The pages were fetched from inside the Durable Object and read there.
    expect(s.pageRequests).toContain(PAGES.article.path);
    expect(ctx.recallText).toMatch(/^<web-results>\n[\s\S]*\n<\/web-results>(\n|$)/);
    // Read from the pages themselves (the docs page's second sentence is in no provider's text).
    expect(ctx.search!.results.map((r) => r.text)).toEqual(ctx.search!.results.map(() => 'page'));
    expect(ctx.recallText).toContain(PAGES.article.main[0]);
    expect(ctx.recallText).toContain(PAGES.docs.main[1]);
    for (const chrome of [...PAGES.article.boilerplate, ...PAGES.docs.boilerplate, ...PAGES.hostile.boilerplate]) expect(ctx.recallText).not.toContain(chrome);
    const placed = ctx.manifest.filter((e) => e.kind === 'search');
    expect(placed.length).toBeGreaterThan(0);
    expect(placed.map((e) => e.web!.url)).toContain(`${s.pagesUrl}${PAGES.article.path}`);
    expect(ctx.search!.results.filter((r) => r.included).map((r) => r.url).sort()).toEqual(placed.map((e) => e.web!.url).sort());
    // The key went to its provider only: nothing the Worker answers carries it.
    expect(JSON.stringify(got)).not.toContain(TEST_KEY);
  });

  it('stats() and webSearch() answer over RPC', async () => {
    expect((await inbound('s2', 'Remember that the garden hose leaks.')).value!.search).toMatchObject({ outcome: 'skipped' });
    expect(s.queries).toEqual([]);
    const found = await call<WebSearchAnswer>('s2', 'webSearch', { query: 'node 24 release notes', conversationId: 's2' });
    expect(found.error).toBeUndefined();
    expect(found.value!.report).toMatchObject({ outcome: 'searched', trigger: { by: 'request' } });
    expect(found.value!.text).toMatch(/^<web-results>\n[\s\S]*\n<\/web-results>$/);
    expect(found.value!.results.map((r) => r.url)).toContain(`${s.pagesUrl}${PAGES.article.path}`);
    expect(s.queries.map((q) => q.query)).toEqual([found.value!.report.query, found.value!.report.query]);
    const stats = await call<MemoryStats>('s2', 'stats');
    expect(stats.error).toBeUndefined();
    expect(stats.value!.search).toMatchObject({ enabled: true, requests: 1, skipped: 1 });
    expect(stats.value!.search.providers.searxng).toMatchObject({ calls: 1, failures: 0 });
    expect(stats.value!.search.providers.tavily).toMatchObject({ calls: 1, failures: 0 });
    expect(stats.value!.search.placed).toBeGreaterThan(0);
  });

  it('providers that fail (a 503, a reply of the wrong shape): the request is answered from memory, the report says why', async () => {
    await call('s3', 'onTurnComplete', { conversationId: 's3', messages: [{ role: 'user', content: 'Our API runs on Node 22 in production.' }, { role: 'assistant', content: 'Noted.' }] });
    s.mode.searxng = 'error';
    s.mode.tavily = 'garbage';
    const got = await inbound('s3', QUESTION);
    expect(got.error).toBeUndefined();
    const ctx = got.value!;
    expect(s.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(ctx.search).toMatchObject({ outcome: 'failed' });
    expect(Object.fromEntries(ctx.search!.providers.map((p) => [p.name, p.outcome]))).toEqual({ searxng: 'error', tavily: 'garbage' });
    expect(ctx.search!.reason).toContain('answered from memory');
    expect(ctx.recallText).not.toContain('<web-results>');
    expect(JSON.stringify(ctx.messages)).toContain('Our API runs on Node 22 in production.');
    expect(JSON.stringify(got)).not.toContain(TEST_KEY);
    expect((await call<MemoryStats>('s3', 'stats')).value!.search).toMatchObject({ triggered: 1, failed: 1, placed: 0 });
  });
});

describe('memoryProxy in workerd over search-enabled objects', () => {
  it('the upstream gets the web results first in the system text; x-pagewise-search: off sends no query', async () => {
    const ask = (content: string, headers: Record<string, string> = {}) => mf.dispatchFetch('http://edge.test/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client', 'x-pagewise-conversation': 'px', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
    });
    const res = await ask(QUESTION);
    expect(res.status).toBe(200);
    await res.text();
    const sent = up.seen[0]!.body.messages as { role: string; content: string }[];
    expect(sent[0]!.role).toBe('system');
    expect(sent[0]!.content).toMatch(/^<web-results>\n[\s\S]*\n<\/web-results>(\n|$)/);
    expect(sent[0]!.content).toContain(PAGES.article.main[0]);
    expect(sent.slice(1)).toEqual([{ role: 'user', content: QUESTION }]);
    expect(up.seen[0]!.raw).not.toContain(TEST_KEY);
    expect(s.queries).toHaveLength(2);
    const off = await ask('And what is the latest npm release?', { 'x-pagewise-search': 'off' });
    expect(off.status).toBe(200);
    await off.text();
    expect(s.queries).toHaveLength(2);
    expect(up.seen[1]!.raw).not.toContain('<web-results>');
    const bad = await ask(QUESTION, { 'x-pagewise-search': 'sometimes' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    expect(up.seen).toHaveLength(2);
  });
});
