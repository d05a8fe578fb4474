// External search from the browser worker: connect({ search }) on OPFS with the real encoder, the providers' fetches
// made by the worker itself to local servers on another origin (tests/support/search-servers.ts) — the SearXNG JSON
// API and real-shaped pages. What is checked: a question with a trigger word searches (the server received exactly the
// query the report shows, the results first in the memory block, within their share), one without does not, a private
// message never reaches the server, a provider that never answers leaves the request answered from memory with the
// reason, a SearXNG that does not allow the page's origin is a failure that says so, and pages the browser may not
// read (no CORS, as most sites) fall back to their snippets with why. The statistics count it all.
import type { Page } from '@playwright/test';
import type { AssembledContext, MemoryStats, SearchReport } from '../../src/contracts/types.js';
import { PAGES, type SearchServers, startSearchServers } from '../support/search-servers.js';
import { expect, harness, openHarness, test } from './fixtures.js';

type Ctx = AssembledContext & { search: SearchReport };

let servers: SearchServers;
// SearXNG answers any origin (what the page's worker needs to read it); of the pages only the article does: the docs
// page and the forum post answer without CORS, as most sites do.
test.beforeAll(async () => { servers = await startSearchServers({ cors: { providers: true, pages: [PAGES.article.path] } }); });
test.afterAll(async () => { await servers?.close(); });
test.beforeEach(() => servers.reset());

/** The search servers are let through the fixture's block of everything outside the preview server. */
async function allowSearch(page: Page): Promise<void> {
  const base = `${servers.pagesUrl}/`;
  await page.context().route((url) => url.href.startsWith(base), (route) => route.continue());
}

// The demo's small budget: recalled memory shows within a short chat. Results may take 70% of what memory gets.
const BUDGET = { contextWindow: 2048, reserveTokens: 256, targetTokens: 128, memoryTokens: 800, protectedRecentTurns: 2 };
const SHARE = 0.7;
const FACT = 'We run the billing service on Node.js 22 in production, upgraded every spring.';
const TRIGGERED = 'What is the latest Node.js release, and should the billing service upgrade to it?';

/** The fact, then chatter enough that it is no longer sent as history: it can only come back as recall. */
function seedMessages(): object[] {
  return [
    { role: 'user', content: FACT, id: 'fact' },
    { role: 'assistant', content: 'Noted: billing on Node.js 22, upgraded each spring.', id: 'fact-reply' },
    ...Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Unrelated chatter number ${i} about the weather and lunch plans.`, id: `f${i}` })),
  ];
}

async function ask(h: ReturnType<typeof harness>, content: string, more: object = {}): Promise<Ctx> {
  const out = await h.call('onMessageInbound', { conversationId: 'c', message: { role: 'user', content, ...more } });
  expect(out.error).toBeUndefined();
  return out.value as Ctx;
}

test('the worker searches a question with a trigger word, places the results first within their share, and sends nothing of other or private messages', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-search';
  await openHarness(page);
  await allowSearch(page);
  const h = harness(page);
  try {
    // The deadline is a safety net here (nothing hangs): the worker fetches and reads the pages on a busy machine. Two
    // results, so that each has room in the small budget: the article (CORS allowed) and the docs page (not).
    const search = { providers: [{ provider: 'searxng', url: servers.searxngUrl }], maxResults: 2, share: SHARE, timeoutMs: 120_000, fetchPages: { allowPrivateHosts: true } };
    expect(await h.open({ storage: { directory }, ...BUDGET, search })).toEqual({ value: true });
    expect((await h.call('onTurnComplete', { conversationId: 'c', messages: seedMessages() })).error).toBeUndefined();

    // A trigger word ("latest"): the worker asks SearXNG, with exactly the query the report shows.
    const ctx = await ask(h, TRIGGERED);
    expect(ctx.search, ctx.search?.reason).toMatchObject({ outcome: 'searched', trigger: { by: 'keyword' } });
    expect(servers.queries.map((q) => q.provider)).toEqual(['searxng']);
    expect(servers.queries[0]!.query).toBe(ctx.search.query);
    expect(ctx.search.query).toMatch(/node/i);
    expect(ctx.search.providers).toEqual([expect.objectContaining({ name: 'searxng', outcome: 'ok', results: 2 })]);
    // The results come first in the memory block, then the recalled fact.
    expect(ctx.recallText.startsWith('<web-results>\n')).toBe(true);
    expect(ctx.recallText.indexOf('<prior-conversation>')).toBeGreaterThan(ctx.recallText.indexOf('</web-results>'));
    expect(ctx.recallText).toContain(FACT);
    // The article allows the page's origin: its main text was fetched and read in the worker, without its chrome.
    const at = (path: string) => ctx.search.results.find((r) => r.url === `${servers.pagesUrl}${path}`)!;
    expect(at(PAGES.article.path)).toMatchObject({ text: 'page', included: true, provider: 'searxng', publishedAt: PAGES.article.publishedAt });
    expect(at(PAGES.article.path).pageError).toBeUndefined();
    expect(PAGES.article.main.some((s) => ctx.recallText.includes(s))).toBe(true);
    for (const b of PAGES.article.boilerplate) expect(ctx.recallText).not.toContain(b);
    // The docs page answered (the server saw the request) but without CORS: the browser kept its body from the worker,
    // so its snippet stands in, and the report says why.
    expect([...servers.pageRequests].sort()).toEqual([PAGES.article.path, PAGES.docs.path].sort());
    expect(at(PAGES.docs.path)).toMatchObject({ text: 'snippet', included: true, pageError: expect.stringMatching(/^could not fetch \(.*Failed to fetch/) });
    expect(ctx.recallText).toContain(`url="${servers.pagesUrl}${PAGES.docs.path}"`);
    // Within their share of the memory budget, each placed result counted in the manifest and the budget.
    const placed = ctx.manifest.filter((e) => e.kind === 'search');
    expect(placed.map((e) => e.web!.url).sort()).toEqual(ctx.search.results.filter((r) => r.included).map((r) => r.url).sort());
    for (const r of ctx.search.results.filter((x) => x.included)) expect(r.tokens, r.url).toBeGreaterThan(0);
    expect(placed.reduce((n, e) => n + e.tokens, 0)).toBeLessThanOrEqual(BUDGET.memoryTokens * SHARE);
    expect(ctx.budget.search).toBeGreaterThan(0);
    expect(ctx.budget.search).toBeLessThanOrEqual(BUDGET.memoryTokens * SHARE);
    expect(ctx.budget.total).toBeLessThanOrEqual(ctx.budget.available);

    // No trigger word, no unknown name: memory answers, nothing leaves.
    const plain = await ask(h, 'Thanks, that helps a lot.');
    expect(plain.search).toMatchObject({ outcome: 'skipped', trigger: { by: 'none' }, providers: [], results: [] });
    expect(plain.search.query).toBeUndefined();
    expect(plain.recallText).not.toContain('<web-results>');
    // A private message with a trigger word and a name never seen: never searched, nothing of it sent.
    const secret = await ask(h, 'What is the latest share price of Zephyrine Holdings today?', { private: true });
    expect(secret.search).toMatchObject({ outcome: 'skipped', trigger: { by: 'none' } });
    expect(secret.search.reason).toMatch(/private/);
    expect(servers.queries).toHaveLength(1);
    expect(JSON.stringify(servers.queries)).not.toMatch(/zephyrine/i);

    const { search: stats } = (await h.call('stats')).value as MemoryStats;
    expect(stats).toMatchObject({ enabled: true, requests: 3, triggered: 1, triggeredBy: { keyword: 1 }, skipped: 2, failed: 0, empty: 0, cached: 0 });
    expect(stats.placed).toBe(placed.length);
    expect(stats.latencyMs.count).toBe(1);
    expect(stats.providers.searxng).toMatchObject({ calls: 1, failures: 0, timeouts: 0 });
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
});

test('a provider that never answers, or does not allow the page\'s origin, leaves the request answered from memory with the reason', async ({ page, external: _ }) => {
  const directory = '.pagewise-test-search-fail';
  await openHarness(page);
  await allowSearch(page);
  const h = harness(page);
  try {
    // The search's own deadline is what is under test: a short one, so that the hanging provider is given up.
    const search = { providers: [{ provider: 'searxng', url: servers.searxngUrl }], timeoutMs: 1_500, fetchPages: { allowPrivateHosts: true } };
    expect(await h.open({ storage: { directory }, ...BUDGET, search })).toEqual({ value: true });
    expect((await h.call('onTurnComplete', { conversationId: 'c', messages: seedMessages() })).error).toBeUndefined();

    servers.mode.searxng = 'hang';
    const hung = await ask(h, TRIGGERED);
    expect(servers.queries).toHaveLength(1);
    expect(hung.search).toMatchObject({ outcome: 'failed', query: servers.queries[0]!.query, results: [] });
    expect(hung.search.providers).toEqual([expect.objectContaining({ name: 'searxng', outcome: 'timeout', results: 0 })]);
    // Given up at the search's one deadline (the decision and the query share it with the provider).
    expect(hung.search.providers[0]!.error).toBe('timed out after 1500 ms');
    expect(hung.search.reason).toMatch(/every provider failed .*answered from memory/);
    expect(hung.recallText).not.toContain('<web-results>');
    expect(hung.recallText).toContain(FACT);
    expect(hung.manifest.filter((e) => e.kind === 'search')).toEqual([]);

    // SearXNG answers, but not to this origin: the query went out, the browser kept the reply from the worker.
    servers.mode.searxng = 'ok';
    servers.cors.providers = false;
    const refused = await ask(h, 'What is the current Node.js release schedule for the billing service?');
    expect(servers.queries).toHaveLength(2);
    expect(refused.search).toMatchObject({ outcome: 'failed', query: servers.queries[1]!.query });
    expect(refused.search.providers).toEqual([expect.objectContaining({ name: 'searxng', outcome: 'error', error: expect.stringMatching(/could not be reached \(.*Failed to fetch/) })]);
    expect(refused.recallText).toContain(FACT);

    const { search: stats } = (await h.call('stats')).value as MemoryStats;
    expect(stats).toMatchObject({ requests: 2, triggered: 2, failed: 2, placed: 0 });
    expect(stats.providers.searxng).toMatchObject({ calls: 2, failures: 2, timeouts: 1 });
  } finally {
    await h.close();
    await h.wipe([directory]);
  }
});
