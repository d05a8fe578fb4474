// External search through the engine, against local servers speaking SearXNG's, Brave's and Tavily's real formats
// and serving real-shaped pages: when it searches and when not (keywords, the LLM's yes/no through a local
// OpenAI-compatible server), what the query holds (never a private word or personal datum), where results go (first in
// the memory block, within their share, exactly counted), and what a failing provider leaves (the request answered
// from memory, the reason in the report).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { braveSearch, searxng, tavily } from '../../../src/index.js';
import type { ChatMessage, InboundInput, Memory, MemoryOptions, SearchOptions } from '../../../src/index.js';
import { PagewiseError } from '../../../src/contracts/errors.js';
import { PAGES, TEST_KEY, type SearchServers, startSearchServers } from '../../support/search-servers.js';
import { PERSONAL_DATA, PRIVATE_TURNS, PRIVATE_WORDS, PUBLIC_TURNS, SEARCH_QUESTIONS, leaks } from '../../support/privacy-corpus.js';
import { completion, startUpstream, type Upstream } from '../../support/upstream.js';
import { createMemory, recount, user, assistant } from '../../support/helpers.js';

let servers: SearchServers;
let upstream: Upstream;
const open: Memory[] = [];

beforeAll(async () => {
  servers = await startSearchServers();
  upstream = await startUpstream();
});
afterAll(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
  await servers.close();
  await upstream.close();
});
beforeEach(() => servers.reset());

const pages = { allowPrivateHosts: true };

async function memoryWith(search: Partial<SearchOptions>, more: MemoryOptions = {}): Promise<Memory> {
  const memory = await createMemory({ search: { providers: [searxng({ url: servers.searxngUrl })], fetchPages: pages, ...search } as SearchOptions, ...more });
  open.push(memory);
  return memory;
}

/** A conversation about something else, so recall has material of its own. */
async function seed(memory: Memory, conversationId: string): Promise<void> {
  await memory.onTurnComplete({ conversationId, messages: [
    user('We migrated the billing service to Postgres 16 and the invoices job now runs at night.'),
    assistant('Good: the nightly invoices job on Postgres 16 avoids the daytime lock contention.'),
  ] });
}

const TRIGGERED = 'What is the latest Node.js release and what changed?';

describe('providers, each in its real format', () => {
  const each: [string, () => SearchOptions['providers']][] = [
    ['SearXNG', () => [searxng({ url: servers.searxngUrl })]],
    ['Brave', () => [braveSearch({ apiKey: TEST_KEY, baseUrl: servers.braveUrl })]],
    ['Tavily', () => [tavily({ apiKey: TEST_KEY, baseUrl: servers.tavilyUrl })]],
  ];
  for (const [name, providers] of each) {
    it(`${name}: a question with a trigger word gets cleaned page text first in its memory block, within its share`, async () => {
      const memory = await memoryWith({ providers: providers(), share: 0.5 }, { memoryTokens: 1600 });
      await seed(memory, 'c');
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
      const search = ctx.search!;
      expect(search.outcome, search.reason).toBe('searched');
      expect(search.trigger.by).toBe('keyword');
      expect(servers.queries.map((q) => q.query)).toEqual([search.query]);
      // First in the memory block, then prior conversation.
      expect(ctx.recallText.startsWith('<web-results>\n')).toBe(true);
      const article = ctx.manifest.find((e) => e.kind === 'search' && e.web?.url.includes(PAGES.article.path));
      expect(article, JSON.stringify(search.results)).toBeDefined();
      expect(ctx.recallText).toContain(PAGES.article.main[0]);
      for (const junk of PAGES.article.boilerplate) expect(ctx.recallText).not.toContain(junk);
      // Within the share of the memory budget, and the whole request exactly counted.
      const webTokens = ctx.manifest.filter((e) => e.kind === 'search').reduce((n, e) => n + e.tokens, 0);
      expect(webTokens).toBeLessThanOrEqual(search.budget!);
      expect(search.budget).toBeLessThanOrEqual(0.5 * 1.5 * 1600);
      expect(ctx.budget.search).toBeGreaterThan(0);
      expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
      expect(recount(ctx)).toBe(ctx.budget.total);
      expect(search.results.filter((r) => r.included).every((r) => r.tokens > 0)).toBe(true);
    });
  }

  it('several providers at once: results merged and deduplicated by URL, each provider reported', async () => {
    const memory = await memoryWith({ providers: [searxng({ url: servers.searxngUrl }), tavily({ apiKey: TEST_KEY, baseUrl: servers.tavilyUrl })], maxResults: 5, fetchPages: false });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    const urls = ctx.search!.results.map((r) => r.url);
    expect(new Set(urls).size).toBe(urls.length);
    expect(ctx.search!.providers.map((p) => [p.name, p.outcome])).toEqual([['searxng', 'ok'], ['tavily', 'ok']]);
    expect(servers.queries.map((q) => q.provider).sort()).toEqual(['searxng', 'tavily']);
    expect(urls.length).toBeLessThanOrEqual(5);
  });
});

describe('when to search', () => {
  it('a message without a trigger does not search; `search: true` does; `search: false` never', async () => {
    const memory = await memoryWith({});
    await seed(memory, 'c');
    const plain = await memory.onMessageInbound({ conversationId: 'c', message: user('Thanks, that makes sense to me.') });
    expect(plain.search?.outcome).toBe('skipped');
    expect(plain.recallText).not.toContain('<web-results>');
    const asked = await memory.onMessageInbound({ conversationId: 'c', message: user('Recipes with chickpeas and spinach'), search: true });
    expect(asked.search?.trigger.by).toBe('request');
    const off = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED), search: false });
    expect(off.search?.outcome).toBe('skipped');
    expect(servers.queries.map((q) => q.query)).toEqual([asked.search!.query]);
  });

  it('a question about this conversation is memory\'s, whatever its time words', async () => {
    const memory = await memoryWith({});
    await seed(memory, 'c');
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('What did we decide today about the invoices job?') });
    expect(ctx.search?.outcome).toBe('skipped');
    expect(servers.queries).toEqual([]);
  });

  it('a private message is never searched, even when asked to', async () => {
    const memory = await memoryWith({ trigger: 'always' });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED, { private: true }), search: true });
    expect(ctx.search?.outcome).toBe('skipped');
    expect(ctx.search?.reason).toMatch(/private/);
    expect(servers.queries).toEqual([]);
  });

  it('the LLM decides (a local OpenAI-compatible server): yes searches, no does not, with the message quoted as data', async () => {
    const memory = await memoryWith({ trigger: 'auto' }, { llm: { baseUrl: `${upstream.base}/v1`, model: 'small-model' }, tagger: 'keyword', summarizer: 'extractive' });
    upstream.next.push({ body: completion('Yes.') });
    const yes = await memory.onMessageInbound({ conversationId: 'c', message: user('Which laptops have the best battery life for travel?') });
    expect(yes.search?.trigger.by, yes.search?.reason).toBe('llm');
    expect(yes.search?.outcome).toBe('searched');
    upstream.next.push({ body: completion('no') });
    const no = await memory.onMessageInbound({ conversationId: 'c', message: user('Write me a haiku about autumn leaves.') });
    expect(no.search?.outcome).toBe('skipped');
    expect(no.search?.reason).toMatch(/LLM said no/);
    const asked = upstream.seen.filter((s) => JSON.stringify(s.body).includes('web search'));
    expect(asked).toHaveLength(2);
    expect(String((asked[1]!.body.messages as { content: string }[])[1]!.content)).toMatch(/^<excerpt part="text">\nWrite me a haiku/);
    expect(servers.queries).toHaveLength(1);
    // A keyword needs no LLM call.
    await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    expect(upstream.seen.filter((s) => JSON.stringify(s.body).includes('web search'))).toHaveLength(2);
  });
});

describe('failures never fail the request', () => {
  const modes = [['hang', 'timeout'], ['error', 'error'], ['refuse', 'refused'], ['garbage', 'garbage'], ['huge', 'garbage']] as const;
  for (const [mode, outcome] of modes) {
    it(`a provider that answers "${mode}": answered from memory, the reason in the report`, async () => {
      const memory = await memoryWith({ providers: [searxng({ url: servers.searxngUrl })], timeoutMs: mode === 'hang' ? 300 : 30_000 });
      await seed(memory, 'c');
      servers.mode.searxng = mode;
      const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user('What is the latest Postgres 16 release for the invoices job?') });
      expect(ctx.search?.outcome).toBe('failed');
      expect(ctx.search?.providers[0]?.outcome).toBe(outcome);
      expect(ctx.search?.reason).toMatch(/answered from memory/);
      expect(ctx.recallText).not.toContain('<web-results>');
      expect(JSON.stringify(ctx.messages)).toContain('Postgres 16');
      expect((await memory.stats()).search.failed).toBe(1);
    });
  }

  it('one provider failing, another answering: the results placed, the failure reported', async () => {
    const memory = await memoryWith({ providers: [searxng({ url: servers.searxngUrl }), braveSearch({ apiKey: 'wrong', baseUrl: servers.braveUrl })], fetchPages: false });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    expect(ctx.search?.outcome).toBe('searched');
    expect(ctx.search?.providers.find((p) => p.name === 'brave')?.outcome).toBe('refused');
    expect(JSON.stringify(ctx.search)).not.toContain('wrong');
  });

  it('pages that cannot be read fall back to the snippet, saying why', async () => {
    const memory = await memoryWith({ fetchPages: true });
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    expect(ctx.search?.results.every((r) => r.text === 'snippet' && /private address|refused/i.test(r.pageError ?? ''))).toBe(true);
    expect(ctx.search?.outcome).toBe('searched');
  });
});

describe('privacy', () => {
  it('no private word, person or personal datum reaches a query, and the manifest shows each query exactly', async () => {
    const memory = await memoryWith({ fetchPages: false, cacheMs: 0 });
    await memory.onTurnComplete({ conversationId: 'p', messages: [...PUBLIC_TURNS, ...PRIVATE_TURNS.map((p) => p.turn)].map((t) => ({ ...t })) });
    const reported: string[] = [];
    for (const question of SEARCH_QUESTIONS) {
      const ctx = await memory.onMessageInbound({ conversationId: 'p', message: user(question) });
      if (ctx.search?.query !== undefined) reported.push(ctx.search.query);
    }
    const received = servers.queries.map((q) => q.query);
    expect(received).toEqual(reported);
    expect(received.length).toBeGreaterThanOrEqual(SEARCH_QUESTIONS.length * 0.8);
    expect(received.flatMap((q) => leaks(q).map((l) => `${q} → ${l}`))).toEqual([]);
    // The control: the questions themselves hold what was taken out.
    expect(SEARCH_QUESTIONS.flatMap(leaks).length).toBeGreaterThan(20);
    expect(PRIVATE_WORDS.length + PERSONAL_DATA.length).toBeGreaterThan(30);
  });

  it('private words are taken out even with anonymize: false', async () => {
    const memory = await memoryWith({ anonymize: false, fetchPages: false });
    await memory.onTurnComplete({ conversationId: 'p', messages: [user('I was diagnosed with hypothyroidism last spring.', { private: true }), assistant('Thank you for telling me.')] });
    const ctx = await memory.onMessageInbound({ conversationId: 'p', message: user('What is the latest research on hypothyroidism treatment?') });
    expect(ctx.search?.query).toBeDefined();
    expect(ctx.search!.query!.toLowerCase()).not.toContain('hypothyroidism');
    expect(ctx.search?.removed?.private).toBe(1);
  });
});

describe('cache and statistics', () => {
  it('the same query within cacheMs is answered from the cache; stats count triggered, skipped, cached and latency', async () => {
    const memory = await memoryWith({ fetchPages: false });
    const first = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    const second = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    await memory.onMessageInbound({ conversationId: 'c', message: user('ok thanks') });
    expect(first.search?.cached).toBeUndefined();
    expect(second.search?.cached).toBe(true);
    expect(servers.queries).toHaveLength(1);
    // Another conversation's same question is not answered from this one's cache (the proxy serves many people).
    const other = await memory.onMessageInbound({ conversationId: 'someone-else', message: user(TRIGGERED) });
    expect(other.search?.cached).toBeUndefined();
    expect(servers.queries).toHaveLength(2);
    const { search } = await memory.stats();
    expect(search).toMatchObject({ enabled: true, requests: 4, triggered: 3, skipped: 1, cached: 1, failed: 0, triggeredBy: { keyword: 3 } });
    expect(search.latencyMs.count).toBe(2);
    expect(search.providers.searxng?.calls).toBe(2);
    expect(search.placed).toBe(first.search!.results.filter((r) => r.included).length * 3);
  });

  it('without the option: no search field, stats say disabled, webSearch is refused with the fix', async () => {
    const memory = await createMemory();
    open.push(memory);
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    expect(ctx.search).toBeUndefined();
    expect((await memory.stats()).search.enabled).toBe(false);
    await expect(memory.webSearch({ query: 'node' })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/search/) });
  });
});

describe('webSearch and options', () => {
  it('webSearch: anonymized like a message, results rendered as data', async () => {
    const memory = await memoryWith({});
    const answer = await memory.webSearch({ query: 'node.js 24.3.0 release notes, mail me at dana.whitfield@example.org' });
    expect(answer.report.query).not.toContain('dana');
    expect(answer.text.startsWith('<web-results>\n')).toBe(true);
    expect(answer.results.length).toBeGreaterThan(0);
    await expect(memory.webSearch({ query: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'query' });
  });

  it('bad options are INVALID_OPTIONS with their path, and nothing opens', async () => {
    const bad: [unknown, string][] = [
      [{ providers: [] }, 'search.providers'],
      [{ providers: [{ provider: 'searxng', url: 'ftp://x' }] }, 'search.providers[0]'],
      [{ providers: [searxng({ url: 'https://s.example' })], trigger: 'sometimes' }, 'search.trigger'],
      [{ providers: [searxng({ url: 'https://s.example' })], share: 2 }, 'search.share'],
      [{ providers: [searxng({ url: 'https://s.example' })], maxResults: 0 }, 'search.maxResults'],
      [{ providers: [searxng({ url: 'https://s.example' })], typo: 1 }, 'search.typo'],
      [{ providers: [braveSearch({ apiKey: '' })] }, 'search.providers[0]'],
    ];
    for (const [search, path] of bad) {
      const error = await createMemory({ search: search as SearchOptions }).then(() => null, (e: unknown) => e);
      expect(error, JSON.stringify(search)).toBeInstanceOf(PagewiseError);
      expect(error).toMatchObject({ code: 'INVALID_OPTIONS' });
      expect((error as PagewiseError).path ?? '').toContain(path);
    }
    const badRequest = await memoryWith({});
    await expect(badRequest.onMessageInbound({ conversationId: 'c', message: user('hi'), search: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'search' });
  });

  it('budgets are exact in a small window: results shrink to their share and the request fits', async () => {
    const memory = await memoryWith({ share: 0.5 }, { contextWindow: 2048, reserveTokens: 256, memoryTokens: 400 });
    await seed(memory, 'c');
    const ctx = await memory.onMessageInbound({ conversationId: 'c', message: user(TRIGGERED) });
    expect(ctx.search?.outcome).toBe('searched');
    expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);
    expect(recount(ctx)).toBe(ctx.budget.total);
    const placed = ctx.manifest.filter((e) => e.kind === 'search');
    expect(ctx.search?.budget).toBeLessThanOrEqual(ctx.budget.available);
    expect(placed.reduce((n, e) => n + e.tokens, 0)).toBeLessThanOrEqual(ctx.search!.budget!);
    // Cut to the passages about the question, or left out (reported as dropped for budget).
    expect(placed.some((e) => /cut to its passages/.test(e.reason)) || ctx.dropped.some((e) => e.kind === 'search' && e.reason === 'budget')).toBe(true);
  });
});

describe('placing and cleaning', () => {
  it('rank first: a first result with a long title and URL is placed before those after it, in a tight share', async () => {
    const { pickWeb } = await import('../../../src/assembly/web-pick.js');
    const { createTokenizer } = await import('../../../src/index.js');
    const tokenizer = await createTokenizer({ tokenizer: 'gpt-tokenizer', encoding: 'o200k_base', margin: 1 });
    const long = { title: `Node.js 24.3.0 released: ${'faster startup, stable permissions, '.repeat(4)}`, url: `https://news.example.com/${'node-release/'.repeat(8)}`, provider: 'searxng', text: 'Node.js 24.3.0 was released on 2026-11-20. '.repeat(20) };
    const short = (n: number) => ({ title: `Other ${n}`, url: `https://o.example/${n}`, provider: 'searxng', text: 'Unrelated text about something else. '.repeat(20) });
    const web = { items: [long, short(2), short(3)], share: 1, focus: new Set(['node']), reason: 'test' };
    const shown = pickWeb(web, 260, tokenizer);
    expect(shown.map((s) => s.index)).toContain(0);
    expect(shown.reduce((n, s) => n + s.cost, 0)).toBeLessThanOrEqual(260);
  });

  it('a page of scripts and styles is read by its text, a fragment without <html> too', async () => {
    const { htmlToText, leanHtml } = await import('../../../src/search/pages.js');
    const bloated = `<html><head><style>${'a{}'.repeat(300_000)}</style></head><body><article><p>The answer is forty-two, said the release notes.</p></article>${'<script>var x = 1;</script>'.repeat(40_000)}</body></html>`;
    expect(bloated.length).toBeGreaterThan(1_800_000);
    expect(leanHtml(bloated).length).toBeLessThan(200);
    expect((await htmlToText(bloated, 'https://x.example')).text).toContain('The answer is forty-two');
    expect((await htmlToText('<p>Just a fragment of text.</p>', 'https://x.example')).text).toBe('Just a fragment of text.');
    // Left open, an opaque element hides the rest, and nothing is scanned twice.
    expect(leanHtml(`<p>kept</p>${'<script>'.repeat(100_000)}`)).toBe('<p>kept</p>');
  });
});

describe('what the review found', () => {
  it('a surname the conversation introduced as a person stays out of the query', async () => {
    const memory = await memoryWith({ fetchPages: false });
    await memory.onTurnComplete({ conversationId: 'q', messages: [user('My colleague Bartholomew Quigley keeps sending me articles.'), assistant('Noted.')] });
    const ctx = await memory.onMessageInbound({ conversationId: 'q', message: user('What is the latest book by Quigley?') });
    expect(ctx.search?.query).toBeDefined();
    expect(ctx.search!.query!).not.toMatch(/quigley/i);
    expect(ctx.search?.removed?.person).toBe(1);
  });

  it('an attachment\'s file name is not the question: only text parts make the query', async () => {
    const memory = await memoryWith({ fetchPages: false });
    const ctx = await memory.onMessageInbound({ conversationId: 'a', message: { role: 'user', content: [
      { type: 'file', data: Buffer.from('%PDF-1.4 x').toString('base64'), mediaType: 'application/pdf', name: 'HIV-test-result-Dana-Whitfield.pdf' },
      { type: 'text', text: 'What is the latest guidance on this?' },
    ] } });
    expect(ctx.search?.query).toBeDefined();
    expect(servers.queries.map((q) => q.query).join(' ')).not.toMatch(/HIV|Whitfield|pdf/i);
  });

  it('a private word inside a run of Chinese (no spaces) stays out', async () => {
    const memory = await memoryWith({ fetchPages: false });
    await memory.onTurnComplete({ conversationId: 'z', messages: [user('我的医生是王小明。', { private: true }), assistant('好的。')] });
    const ctx = await memory.onMessageInbound({ conversationId: 'z', message: user('王小明医生最新消息是什么'), search: true });
    expect(servers.queries.map((q) => q.query).join(' ')).not.toContain('王小明');
    expect(ctx.search?.outcome).toBe('skipped');
  });

  it('a word of a private message in the request\'s own history stays out', async () => {
    const memory = await memoryWith({ fetchPages: false });
    const ctx = await memory.onMessageInbound({ conversationId: 'h', message: user('What is the latest news about Quibbletron?'),
      history: [user('My secret employer is Quibbletron.', { private: true }), assistant('Understood.')] });
    expect(servers.queries.map((q) => q.query).join(' ')).not.toMatch(/quibbletron/i);
    expect(ctx.search?.removed?.private).toBe(1);
  });

  it('a page nested 100,000 deep is read in linear time (the parser\'s cost grows with the square of the depth)', async () => {
    const { htmlToText } = await import('../../../src/search/pages.js');
    const n = 100_000;
    const page = await htmlToText(`<html><body>${'<div>'.repeat(n)}deep inside${'</div>'.repeat(n)}<p>After the nesting.</p></body></html>`, 'https://x.example');
    expect(page.text).toContain('deep inside');
  });

  it('stats() and another conversation do not wait behind a hanging search', async () => {
    const memory = await memoryWith({ timeoutMs: 120_000 });
    servers.mode.searxng = 'hang';
    const order: string[] = [];
    const hanging = memory.onMessageInbound({ conversationId: 'slow', message: user(TRIGGERED) }).then(() => order.push('slow'));
    await servers.received('searxng');
    await memory.stats();
    order.push('stats');
    await memory.onMessageInbound({ conversationId: 'other', message: user('Thanks, that helps.') });
    order.push('other');
    expect(order).toEqual(['stats', 'other']);
    await memory.close();
    await hanging;
    expect(order).toEqual(['stats', 'other', 'slow']);
  });

  it('an app\'s LLM that ignores its abort signal does not hold the request past timeoutMs', async () => {
    const never = { name: 'mine', model: 'm', complete: () => new Promise<never>(() => undefined) };
    const memory = await memoryWith({ trigger: 'llm', timeoutMs: 300 }, { llm: never, tagger: 'keyword', summarizer: 'extractive' });
    const ctx = await memory.onMessageInbound({ conversationId: 'l', message: user('Is the sky blue?') });
    expect(ctx.search?.outcome).toBe('skipped');
    expect(ctx.search?.reason).toMatch(/timed out after 300 ms/);
  });
});

describe('what the second review found', () => {
  it('private words of the request\'s own messages stay out, however written: a possessive, a hyphen, a tool call, a file name, a message after the new one', async () => {
    const memory = await memoryWith({ fetchPages: false });
    const priv = (m: Partial<ChatMessage>) => ({ role: 'user', content: 'ok', ...m, private: true }) as ChatMessage;
    const cases: [string, Partial<InboundInput>][] = [
      ['Quibbletron', { history: [priv({ content: "I work in Quibbletron's lab" }), assistant('ok')] }],
      ['Dubois', { history: [priv({ content: 'my lawyer is Dubois-Martin' }), assistant('ok')] }],
      ['Zanzibarco', { history: [priv({ role: 'assistant', content: null, toolCalls: [{ id: 't1', type: 'function', function: { name: 'lookup', arguments: '{"employer":"Zanzibarco"}' } }] }), { role: 'tool', content: 'done', toolCallId: 't1' }] }],
      ['Kowalczyk', { history: [priv({ content: [{ type: 'file', name: 'Kowalczyk-divorce.pdf', mediaType: 'application/pdf', data: 'aGVsbG8=' }] }), assistant('ok')] }],
      ['Vexilloid', { after: [{ role: 'assistant', content: null, toolCalls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{}' } }] }, priv({ role: 'tool', content: 'Vexilloid record', toolCallId: 'x' })] }],
    ];
    for (const [word, extra] of cases) {
      const ctx = await memory.onMessageInbound({ conversationId: `r-${word}`, message: user(`latest news ${word}`), search: true, ...extra });
      expect(ctx.search?.removed?.private, word).toBe(1);
    }
    expect(servers.queries.map((q) => q.query).join(' ')).not.toMatch(/quibbletron|dubois|zanzibarco|kowalczyk|vexilloid/i);
  });

  it('a Korean name with its particle (one token) stays out when a private turn holds the name', async () => {
    const memory = await memoryWith({ fetchPages: false });
    await memory.onTurnComplete({ conversationId: 'k', messages: [user('제 담당 의사는 김민준입니다', { private: true }), assistant('네.')] });
    const ctx = await memory.onMessageInbound({ conversationId: 'k', message: user('김민준에게 최신 뉴스'), search: true });
    expect(ctx.search?.removed?.private).toBe(1);
    expect(servers.queries.map((q) => q.query).join(' ')).not.toContain('김민준');
  });

  it('a page keeps its text when an attribute or its title spells <script>, and a tag never closed costs one pass', async () => {
    const { htmlToText, leanHtml } = await import('../../../src/search/pages.js');
    const body = '<article><p>The committee approved the budget after a long debate about schools and roads.</p></article>';
    for (const head of ['<a title="x <script> y">link</a>', '<title>a <script> tag</title>', '<meta content="<style>">', '<!-->', '<textarea>a <!-- b</textarea>']) {
      expect((await htmlToText(`<html><head></head><body>${head}${body}</body></html>`, 'https://x.example')).text, head).toContain('approved the budget');
    }
    expect(leanHtml('<x'.repeat(1_000_000)).length).toBeGreaterThan(0);
  });
});
