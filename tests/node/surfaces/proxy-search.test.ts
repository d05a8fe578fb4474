// memoryProxy with external search (Node): a request whose new message calls for current facts reaches the upstream
// with the web results first in the memory the proxy adds (the system text), the page's main text without its
// chrome; the client's own messages go on as sent. `x-pagewise-search` turns it on or off per request; providers
// that hang or fail never fail the request. Real search formats and pages (tests/support/search-servers.ts), the
// upstream double (tests/support/upstream.ts).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { memoryProxy, proxyConversationKey } from '../../../src/surfaces/proxy.js';
import { searxng, tavily } from '../../../src/index.js';
import type { Memory, MemoryOptions, SearchOptions } from '../../../src/index.js';
import { createMemory } from '../../support/helpers.js';
import { PAGES, startSearchServers, TEST_KEY, type SearchServers } from '../../support/search-servers.js';
import { startUpstream, type Upstream } from '../../support/upstream.js';

let up: Upstream;
let s: SearchServers;
const KEY = 'sk-upstream-secret';
const C1 = proxyConversationKey('u1', 'c1');
const QUESTION = "what's the latest Node.js release?";

beforeAll(async () => { [up, s] = await Promise.all([startUpstream(), startSearchServers()]); });
afterAll(() => Promise.all([up.close(), s.close()]));

let memory: Memory;
let pending: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => { pending.push(p); } };
const settled = async () => { await Promise.all(pending); pending = []; };

/**
 * A memory searching SearXNG and Tavily at once (the pages on 127.0.0.1: allowed here only). Its deadline is a safety
 * net (a busy machine loads the page reader slowly), except where a test sets it.
 */
const withSearch = async (extra: Partial<SearchOptions> = {}, options: MemoryOptions = {}) => {
  const providers = [searxng({ url: s.searxngUrl }), tavily({ apiKey: TEST_KEY, baseUrl: s.tavilyUrl })];
  memory = await createMemory({ ...options, search: { providers, fetchPages: { allowPrivateHosts: true }, timeoutMs: 60_000, ...extra } });
  return memoryProxy({ memory, authenticate: (r) => (r.headers.get('authorization') === 'Bearer client-key' ? 'u1' : null), openai: { baseUrl: `${up.base}/v1`, apiKey: KEY } });
};
const post = (body: unknown, headers: Record<string, string> = {}) => new Request('http://proxy.test/v1/chat/completions', {
  method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client-key', 'x-pagewise-conversation': 'c1', ...headers }, body: JSON.stringify(body),
});
const ask = (content: string) => ({ model: 'm', messages: [{ role: 'user', content }] });
/** What the upstream's n-th request got as its system text ('' when none). */
const systemText = (n = 0): string => {
  const first = (up.seen[n]!.body.messages as { role: string; content: unknown }[])[0]!;
  return first.role === 'system' && typeof first.content === 'string' ? first.content : '';
};
const WEB_BLOCK = /^<web-results>\n[\s\S]*\n<\/web-results>(\n|$)/;

beforeEach(() => { s.reset(); up.next.length = 0; up.seen.length = 0; pending = []; });
afterEach(async () => { await settled(); await memory?.close(); });

describe('memoryProxy with search: what reaches the upstream', () => {
  it('a message that calls for current facts: the web results first in the system text, the pages\' main text, the client\'s messages as sent', async () => {
    const proxy = await withSearch();
    const client = {
      model: 'm', temperature: 0.2, user: 'end-user-7',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'I run a small API on Node.' },
        { role: 'assistant', content: 'Noted: a small API on Node.' },
        { role: 'user', content: [{ type: 'text', text: QUESTION }] },
      ],
    };
    const res = await proxy(post(client), ctx);
    expect(res.status).toBe(200);
    const replyText = await res.text();
    // Both providers were asked (each once), and the pages the results point at were fetched.
    expect(s.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(s.pageRequests).toContain(PAGES.article.path);
    expect(up.seen).toHaveLength(1);
    const sent = up.seen[0]!.body as typeof client;
    // The client's request, as sent, but for what memory added after its own system text.
    const [system, ...rest] = sent.messages;
    expect(rest).toEqual(client.messages.slice(1));
    expect({ ...sent, messages: [] }).toEqual({ ...client, messages: [] });
    expect(system!.role).toBe('system');
    expect((system!.content as string).startsWith('Be brief.\n\n')).toBe(true);
    const added = (system!.content as string).slice('Be brief.\n\n'.length);
    expect(added).toMatch(WEB_BLOCK);
    // The article's main text arrived; none of its site's chrome (nor the other pages') did.
    expect(added).toContain(`url="${s.pagesUrl}${PAGES.article.path}"`);
    expect(added).toContain(PAGES.article.main[0]);
    // The docs page's second sentence is in no provider's text: it came from the page itself.
    expect(added).toContain(PAGES.docs.main[1]);
    for (const chrome of [...PAGES.article.boilerplate, ...PAGES.docs.boilerplate, ...PAGES.hostile.boilerplate]) expect(added).not.toContain(chrome);
    // The search keys stay on the server: neither the upstream nor the client sees one.
    for (const text of [up.seen[0]!.raw, replyText]) expect(text).not.toContain(TEST_KEY);
    expect(up.seen[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    // The exchange is stored as the client had it: the web results are not part of the conversation.
    await settled();
    expect((await memory.turns(C1)).map((t) => t.text)).toEqual([QUESTION, 'ok']);
    expect((await memory.stats()).search).toMatchObject({ enabled: true, triggered: 1, triggeredBy: { keyword: 1 }, placed: expect.any(Number) });
    expect((await memory.stats()).search.placed).toBeGreaterThan(0);
  });

  it('with recalled memory too: the web results come first, the recalled conversation after them, in one system text', async () => {
    // A window the stored conversation does not fit: memory recalls from it.
    const proxy = await withSearch({}, { contextWindow: 2000, reserveTokens: 300 });
    for (let i = 0; i < 30; i++) {
      await memory.onTurnComplete({ conversationId: C1, messages: [
        { role: 'user', content: `Garden question ${i}: when should I water the beans, and how much, given the clay soil and the heat this week?${i === 4 ? ' Our API runs on Node 22 in production.' : ''}` },
        { role: 'assistant', content: `Water the beans early in the morning (${i}), deeply rather than often, and mulch the clay so it keeps the water.` },
      ] });
    }
    const res = await proxy(post(ask(`${QUESTION} Does it matter for the API we run on Node 22 in production?`)), ctx);
    expect(res.status).toBe(200);
    await res.text();
    const system = systemText();
    // A topics hint (the stable part) may come before it; then the web results, then what was recalled.
    expect(system).toMatch(/^(<context-topics>[\s\S]*?<\/context-topics>\n)?<web-results>\n[\s\S]*\n<\/web-results>\n<prior-conversation>\n/);
    expect(system.slice(system.indexOf('<prior-conversation>'))).toContain('Our API runs on Node 22 in production.');
    expect(system.slice(0, system.indexOf('<prior-conversation>'))).toContain(PAGES.article.main[0]);
  });

  it('streaming (SSE): the same memory goes up, the stream comes back untouched, the exchange is stored after it', async () => {
    const proxy = await withSearch();
    const stream = 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Node.js "}}]}\n\ndata: {"choices":[{"index":0,"delta":{"content":"24.3.0."}}]}\n\ndata: [DONE]\n\n';
    up.next.push({ type: 'text/event-stream', body: stream });
    const res = await proxy(post({ ...ask(QUESTION), stream: true }), ctx);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(await res.text()).toBe(stream);
    const system = systemText();
    expect(system).toMatch(WEB_BLOCK);
    expect(system).toContain(PAGES.article.main[0]);
    expect((up.seen[0]!.body.messages as unknown[]).slice(1)).toEqual(ask(QUESTION).messages);
    await settled();
    expect((await memory.turns(C1)).map((t) => t.text)).toEqual([QUESTION, 'Node.js 24.3.0.']);
  });
});

describe('memoryProxy with search: the x-pagewise-search header', () => {
  it('off: a message that would trigger a search goes on without one; no query leaves the server', async () => {
    const proxy = await withSearch();
    const res = await proxy(post(ask(QUESTION), { 'x-pagewise-search': 'off' }), ctx);
    expect(res.status).toBe(200);
    await res.text();
    expect(s.queries).toEqual([]);
    expect(s.pageRequests).toEqual([]);
    expect(up.seen[0]!.raw).not.toContain('<web-results>');
    expect(up.seen[0]!.body.messages).toEqual(ask(QUESTION).messages);
    expect((await memory.stats()).search).toMatchObject({ triggered: 0, skipped: 1 });
  });

  it('on: a message no trigger picks is searched anyway (and without the header, it is not)', async () => {
    const proxy = await withSearch();
    const plain = 'Tell me a little about sourdough bread.';
    await (await proxy(post(ask(plain)), ctx)).text();
    expect(s.queries).toEqual([]);
    expect(systemText(0)).not.toContain('<web-results>');
    const res = await proxy(post(ask(plain), { 'x-pagewise-search': ' ON ' }), ctx);
    expect(res.status).toBe(200);
    await res.text();
    expect(s.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(s.queries.every((q) => q.query.toLowerCase().includes('sourdough'))).toBe(true);
    expect(systemText(1)).toMatch(WEB_BLOCK);
    expect((await memory.stats()).search.triggeredBy).toEqual({ request: 1 });
  });

  it('a value other than on/off: 400 INVALID_ARGUMENT, nothing searched, forwarded or stored', async () => {
    const proxy = await withSearch();
    for (const value of ['yes', '1', 'on,off', '']) {
      const res = await proxy(post(ask(QUESTION), { 'x-pagewise-search': value }), ctx);
      expect(res.status, JSON.stringify(value)).toBe(400);
      const body = await res.json() as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'pagewise_error', code: 'INVALID_ARGUMENT' });
      expect(body.error.message).toContain('x-pagewise-search');
    }
    await settled();
    expect(s.queries).toEqual([]);
    expect(up.seen).toEqual([]);
    expect(await memory.conversations()).toEqual([]);
  });
});

describe('memoryProxy with search: providers that fail never fail the request', () => {
  it('providers that hang past timeoutMs: the reply comes back, the upstream gets memory without web results', async () => {
    const proxy = await withSearch({ timeoutMs: 300 });
    // The conversation so far, in memory (the client sends only its new message).
    await memory.onTurnComplete({ conversationId: C1, messages: [{ role: 'user', content: 'Our API runs on Node 22 in production.' }, { role: 'assistant', content: 'Noted: Node 22 in production.' }] });
    s.mode.searxng = 'hang';
    s.mode.tavily = 'hang';
    const res = await proxy(post(ask(QUESTION)), ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ choices: [{ message: { content: 'ok' } }] });
    const sent = up.seen[0]!;
    expect(sent.raw).not.toContain('<web-results>');
    expect(sent.raw).toContain('Our API runs on Node 22 in production.');
    expect((sent.body.messages as { content: unknown }[]).at(-1)).toEqual({ role: 'user', content: QUESTION });
    const stats = (await memory.stats()).search;
    expect(stats).toMatchObject({ triggered: 1, failed: 1, placed: 0 });
    // Both were asked, and neither answered in time.
    expect(stats.providers.searxng).toMatchObject({ calls: 1, failures: 1, timeouts: 1 });
    expect(stats.providers.tavily).toMatchObject({ calls: 1, failures: 1, timeouts: 1 });
    await settled();
    expect((await memory.turns(C1)).map((t) => t.text).slice(-2)).toEqual([QUESTION, 'ok']);
  });

  it('providers that answer with errors (503, a refused key): the reply comes back without web results, no key in it', async () => {
    const proxy = await withSearch();
    s.mode.searxng = 'error';
    s.mode.tavily = 'refuse';
    const res = await proxy(post(ask(QUESTION)), ctx);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(s.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(up.seen[0]!.raw).not.toContain('<web-results>');
    for (const t of [text, up.seen[0]!.raw]) expect(t).not.toContain(TEST_KEY);
    expect((await memory.stats()).search).toMatchObject({ triggered: 1, failed: 1 });
  });
});
