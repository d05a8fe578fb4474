// The demo's "Search the web": off by default, switched on in Settings with a SearXNG URL (checked before saving, kept
// across a reload), the memory reconnected with the search option; then a question with a trigger word is searched by
// the worker against a local SearXNG (tests/support/search-servers.ts) and the inspector shows the report: why it
// searched, the exact query sent, each result as a link to its page, whether it was placed and its tokens, why a page
// was not read, a provider's failure with what to check. A hostile result title stays text.
import type { Page } from '@playwright/test';
import { PAGES, type SearchServers, startSearchServers } from '../support/search-servers.js';
import { expect, test } from './fixtures.js';

// A title as a hostile page or provider could send it: it must stay text in the inspector, the manifest and the chat.
const HOSTILE_TITLE = `<script>window.__pwned = 'script'</script><img src=x onerror="window.__pwned = 'img'"> Upgrade report`;

let servers: SearchServers;
// SearXNG allows any origin (the demo's worker reads it from another port); the pages are on loopback, which the demo
// does not fetch: their snippets stand in, and the inspector says why.
test.beforeAll(async () => { servers = await startSearchServers({ cors: { providers: true } }); });
test.afterAll(async () => { await servers?.close(); });
test.beforeEach(() => servers.reset());

async function save(page: Page): Promise<void> {
  await page.click('#settings button[type="submit"]');
}

/** Sends a message and waits until the demo says it is sent (stored, the inspector drawn). */
async function send(page: Page, text: string): Promise<void> {
  await page.fill('#input', text);
  await page.click('#send');
  await expect(page.locator('body')).toHaveAttribute('data-send', 'sent');
}

test('the demo\'s "Search the web": off by default, on with a SearXNG URL, the inspector\'s report with each result\'s link, a hostile title as text, a refused instance, off again', async ({ page, external: _ }) => {
  test.setTimeout(600_000);
  await page.context().route((url) => url.href.startsWith(`${servers.pagesUrl}/`), (route) => route.continue());
  const at = (path: string) => `${servers.pagesUrl}${path}`;
  servers.results.searxng = [
    { title: PAGES.article.title, url: at(PAGES.article.path), snippet: PAGES.article.main[0]!, publishedAt: PAGES.article.publishedAt },
    { title: HOSTILE_TITLE, url: at(PAGES.hostile.path), snippet: 'I tried the new release on my laptop and it went fine.' },
    { title: PAGES.docs.title, url: at(PAGES.docs.path), snippet: 'The fsPromises.readFile() method reads the entire contents of a file.' },
  ];
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto('/demo/');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();

  // Off by default: a question with a trigger word sends nothing, and the inspector says search is off.
  await send(page, 'What is the latest Node.js release?');
  await expect(page.locator('#search-report')).toHaveAttribute('data-outcome', 'off');
  await expect(page.locator('#search-report')).toContainText('nothing leaves this device');
  expect(servers.queries).toEqual([]);

  // The switch and its URL, with what the page says about keys; a missing or bad URL is refused before saving.
  await page.click('#settings-panel summary');
  const toggle = page.locator('input[name="search"]');
  await expect(toggle).not.toBeChecked();
  await expect(page.locator('#settings')).toContainText('a key for Brave or Tavily would sit in this page');
  await toggle.check();
  await save(page);
  await expect(page.locator('#settings-error')).toHaveText(/^SearXNG URL is required/);
  await page.fill('input[name="searxngUrl"]', 'not a url');
  await save(page);
  await expect(page.locator('#settings-error')).toHaveText(/^SearXNG URL is not a URL/);
  await expect(page.locator('#mode')).not.toContainText('searching the web');
  await page.fill('input[name="searxngUrl"]', servers.searxngUrl);
  await save(page);
  await expect(page.locator('#settings-error')).toHaveText('');
  await expect(page.locator('#mode')).toContainText(`searching the web with ${servers.searxngUrl}`);
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();

  // A trigger word: the worker asks SearXNG; the inspector shows why, the exact query, and every result.
  await send(page, 'And what changed in the latest Node.js release?');
  const report = page.locator('#search-report');
  await expect(report).toHaveAttribute('data-outcome', 'searched');
  expect(servers.queries).toHaveLength(1);
  await expect(report.locator('.search-query')).toHaveText(servers.queries[0]!.query);
  await expect(report.locator('.search-outcome')).toContainText('keyword "latest"');
  await expect(report.locator('.search-providers li')).toHaveText([/^searxng: ok, 3 results in \d+ ms$/]);
  const links = report.locator('.search-results a.result-title');
  await expect(links).toHaveCount(3);
  expect(await links.evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href))).toEqual(servers.results.searxng.map((r) => r.url));
  for (const a of await links.all()) {
    await expect(a).toHaveAttribute('target', '_blank');
    await expect(a).toHaveAttribute('rel', 'noopener noreferrer');
  }
  await expect(links.nth(0)).toHaveText(PAGES.article.title);
  // Placed or not, with tokens; each page on loopback not read, its snippet used, and why.
  await expect(report.locator('.search-results li.placed').first()).toContainText(/ placed, \d+ tokens · from the snippet · searxng/);
  const placed = await report.locator('.search-results li.placed').count();
  expect(placed).toBeGreaterThan(0);
  await expect(page.locator('#manifest tbody tr').filter({ has: page.locator('a.result-title') })).toHaveCount(placed);
  await expect(report.locator('.search-results li.left-out')).toHaveCount(3 - placed);
  await expect(report.locator('.page-error')).toHaveCount(3);
  await expect(report.locator('.page-error').first()).toContainText('pages on this machine or its network are not fetched');
  await expect(page.locator('#legend')).toContainText(/web results [1-9]\d*/);
  await expect(page.locator('#manifest a.result-title').first()).toHaveAttribute('rel', 'noopener noreferrer');

  // The hostile title is the link's text, nowhere markup: no script or image was made of it, nothing ran.
  await expect(links.nth(1)).toHaveText(HOSTILE_TITLE);
  for (const where of ['#search-report', '#manifest', '#dropped', '#sent', '#turns']) {
    await expect(page.locator(`${where} script, ${where} img`), where).toHaveCount(0);
  }
  await expect(page.locator('#turns li.live').last()).toContainText(`From the web: ${HOSTILE_TITLE}`);
  expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined();

  // Kept across a reload (a URL may be stored; no key is ever asked for).
  await page.reload();
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await page.click('#settings-panel summary');
  await expect(page.locator('input[name="search"]')).toBeChecked();
  await expect(page.locator('input[name="searxngUrl"]')).toHaveValue(servers.searxngUrl);

  // An instance that does not allow the page's origin: the query went out, the reply was kept from the page, and the
  // inspector says what to check. The question is answered from memory.
  servers.cors.providers = false;
  await send(page, 'What is the current Node.js release schedule?');
  await expect(report).toHaveAttribute('data-outcome', 'failed');
  expect(servers.queries).toHaveLength(2);
  await expect(report.locator('.search-providers li.error')).toContainText(`must allow this page's origin (${new URL(page.url()).origin}) with CORS`);
  await expect(report.locator('.search-outcome')).toContainText('answered from memory');

  // Off again: nothing is searched.
  await page.locator('input[name="search"]').uncheck();
  await save(page);
  await expect(page.locator('#mode')).not.toContainText('searching the web');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await send(page, 'What is the latest Deno release?');
  await expect(report).toHaveAttribute('data-outcome', 'off');
  expect(servers.queries).toHaveLength(2);
});
