import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { blockExternal, expect, test } from './fixtures.js';
import { EDGE_PORT, EDGE_TOKENS, SYNC_URL } from './servers.js';

// Two browser profiles of one person — two contexts, each its own storage and so its own OPFS: two devices — sync
// through the example Worker (examples/edge/worker.ts in workerd: tests/browser/edge-server.ts, started by the
// Playwright config) with the demo's own "Sync with the edge" button.

const EDGE = `http://127.0.0.1:${EDGE_PORT}`;

interface Profile { context: BrowserContext; page: Page; external: string[]; allowed: string[]; hold: { until: Promise<void> | null } }

async function openProfile(browser: Browser, baseURL: string): Promise<Profile> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1400, height: 900 } });
  const allowed = [EDGE];
  const external = await blockExternal(context, baseURL, allowed);
  // Registered last, so it runs first: lets a test hold the requests to the edge (until it lets them go) to watch a sync
  // under way.
  const hold = { until: null as Promise<void> | null };
  await context.route((url) => url.href.startsWith(EDGE), async (route) => {
    if (hold.until) await hold.until;
    return route.fallback();
  });
  const page = await context.newPage();
  await page.goto('/demo/');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await expect(page.locator('#status')).toContainText('kept across reloads');
  return { context, page, external, allowed, hold };
}

async function saveSync(page: Page, url: string, token: string): Promise<void> {
  const panel = page.locator('#settings-panel');
  if (!(await panel.evaluate((d) => (d as HTMLDetailsElement).open))) await page.click('#settings-panel summary');
  await page.fill('input[name="syncUrl"]', url);
  await page.fill('input[name="syncToken"]', token);
  await page.click('#settings button[type="submit"]');
  await expect(page.locator('#settings-error')).toHaveText('');
  await page.click('#settings-panel summary');
}

/** Clicks "Sync with the edge" and returns what it said when it finished. */
async function sync(page: Page): Promise<string> {
  await expect(page.locator('#sync')).toBeEnabled();
  await page.evaluate(() => { delete document.body.dataset.sync; });
  await page.click('#sync');
  await expect(page.locator('body')).toHaveAttribute('data-sync', /^(done|failed)$/);
  await expect(page.locator('#sync')).toBeEnabled();
  return (await page.locator('#sync-status').textContent())!;
}

async function say(page: Page, text: string): Promise<void> {
  const before = await stored(page).count();
  await page.fill('#input', text);
  await page.click('#send');
  await expect(stored(page)).toHaveCount(before + 1);
}

const stored = (page: Page) => page.locator('#turns li:not(.live)');

/** The open conversation as the chat shows it: each message's id, role, number, time and text, in order. */
const shown = (page: Page) => stored(page).evaluateAll((lis) => lis.map((li) => ({
  id: (li as HTMLElement).dataset.id, role: li.classList[0], meta: li.querySelector('.meta')?.firstChild?.textContent?.trim(), text: li.lastChild?.textContent,
})));

/** Opens a new conversation and returns its id. */
async function newConversation(page: Page): Promise<string> {
  await page.click('#new-conversation');
  await expect(page.locator('#conversations button.current')).toHaveText(/^chat-\w+ \(0\)$/);
  return (await page.locator('#conversations button.current').textContent())!.replace(/ \(0\)$/, '');
}

async function open(page: Page, id: string): Promise<void> {
  const button = page.locator('#conversations button', { hasText: new RegExp(`^${id} \\(`) });
  if (!(await button.getAttribute('class'))?.includes('current')) await button.click();
  await expect(page.locator('#conversations button.current')).toHaveText(new RegExp(`^${id} \\(`));
}

async function wipe(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
    indexedDB.deleteDatabase('keyval-store');
  });
}

test('two browser profiles sync through the example Worker: the same conversation in the same order both ways, forgets, progress, refused tokens and an edge that is down', async ({ browser, baseURL }, testInfo) => {
  const laptop = await openProfile(browser, baseURL!);
  const phone = await openProfile(browser, baseURL!);
  const shot = (p: Profile, name: string, fullPage = false) => p.page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage });
  try {
    const { page: one } = laptop;
    const { page: two } = phone;
    // Sync needs a token first: the button says where to set it. The settings refuse what remoteMemory would.
    await one.click('#sync');
    await expect(one.locator('#sync-status')).toContainText('set the sync URL and token in Settings first');
    await expect(one.locator('#settings-panel')).toHaveAttribute('open', '');
    await expect(one.locator('input[name="syncUrl"]')).toHaveValue('http://localhost:8787/v1/pagewise/sync');
    await one.fill('input[name="syncUrl"]', 'not a url');
    await one.fill('input[name="syncToken"]', EDGE_TOKENS.alice);
    await one.click('#settings button[type="submit"]');
    await expect(one.locator('#settings-error')).toContainText('sync URL is the sync endpoint\'s absolute URL');
    await one.fill('input[name="syncUrl"]', 'http://edge.example/v1/pagewise/sync');
    await one.click('#settings button[type="submit"]');
    await expect(one.locator('#settings-error')).toContainText('Plain http:// to edge.example would send the token and the memory unencrypted: use https://');
    await one.fill('input[name="syncToken"]', 'two words');
    await one.fill('input[name="syncUrl"]', SYNC_URL);
    await one.click('#settings button[type="submit"]');
    await expect(one.locator('#settings-error')).toContainText('sync token must be printable characters without spaces');
    await one.click('#settings-panel summary');
    await saveSync(one, SYNC_URL, EDGE_TOKENS.alice);
    await saveSync(two, SYNC_URL, EDGE_TOKENS.alice);

    // The laptop writes a conversation of its own (a new one: an edge server reused from an earlier run may hold others).
    const id = await newConversation(one);
    await say(one, 'The spare key of the boathouse is under the blue flowerpot.');
    await say(one, 'Our sailing club meets on Thursdays at seven.');
    await one.click('#seed');
    await expect(stored(one)).toHaveCount(42);
    const written = await shown(one);
    expect(written.map((t) => t.role)).toContain('assistant');

    // Up to the edge, held until the sync under way has been seen: the bar, then what moved so far, then what moved in all.
    let letGo!: () => void;
    laptop.hold.until = new Promise<void>((ok) => { letGo = ok; });
    await one.evaluate(() => {
      const seen: string[] = ((window as unknown as { syncSaid: string[] }).syncSaid = []);
      new MutationObserver(() => seen.push(document.getElementById('sync-status')!.textContent!)).observe(document.getElementById('sync-status')!, { childList: true, characterData: true, subtree: true });
    });
    await one.click('#sync');
    await expect(one.locator('#sync-progress')).toBeVisible();
    await expect(one.locator('#sync')).toBeDisabled();
    laptop.hold.until = null;
    letGo();
    await expect(one.locator('body')).toHaveAttribute('data-sync', 'done');
    await expect(one.locator('#sync-progress')).toBeHidden();
    const said = await one.evaluate(() => (window as unknown as { syncSaid: string[] }).syncSaid);
    expect(said).toContainEqual(expect.stringMatching(/^syncing with 127\.0\.0\.1:\d+…$/));
    expect(said).toContainEqual(expect.stringMatching(/^syncing · pushing to the edge: 42 messages in 1 batch, [\d.]+ KB…$/));
    await expect(one.locator('#sync-status')).toHaveText(/^Synced with 127\.0\.0\.1:\d+: (pulled \d+ messages?, pushed 42|pushed 42 messages) \(\d+ conversations?\); [\d.]+ KB in \d+\.\d s\.$/);
    expect(await shown(one)).toEqual(written);

    // The phone, empty, pulls it: the conversation is listed at once, with the same messages in the same order.
    const down = await sync(two);
    expect(down).toMatch(/^Synced with 127\.0\.0\.1:\d+: pulled \d+ messages \(\d+ conversations?\); [\d.]+ KB in \d+\.\d s\.$/);
    expect(Number(/pulled (\d+)/.exec(down)![1])).toBeGreaterThanOrEqual(42);
    await expect(two.locator('#conversations')).toContainText(`${id} (42)`);
    await open(two, id);
    await expect(stored(two)).toHaveCount(42);
    expect(await shown(two)).toEqual(written);
    await expect(stored(two).first()).toContainText('The spare key of the boathouse is under the blue flowerpot.');
    await shot(phone, 'sync-1-phone-pulled-1400px');
    await shot(phone, 'sync-1-phone-pulled-1400px-full', true);

    // The phone writes more and syncs; the laptop syncs and its open conversation shows them, in the same order.
    await say(two, 'Bring the red life jackets on Thursday.');
    await say(two, 'The club moved the meeting to eight.');
    expect(await sync(two)).toMatch(/: pushed 2 messages \(1 conversation\); /);
    expect(await sync(one)).toMatch(/: pulled 2 messages \(1 conversation\); /);
    await expect(stored(one)).toHaveCount(44);
    const both = await shown(two);
    expect(await shown(one)).toEqual(both);
    expect(both.slice(-2).map((t) => t.text)).toEqual(['Bring the red life jackets on Thursday.', 'The club moved the meeting to eight.']);
    await shot(laptop, 'sync-2-laptop-pulled-1400px');
    expect(await sync(one)).toMatch(/: already in sync: nothing to move; [\d.]+ (bytes|KB) in \d+\.\d s\.$/);

    // A forget travels: a conversation forgotten on the laptop is gone from the phone after both sync.
    const scratch = await newConversation(two);
    await say(two, 'Scratch note: the locker code is 4-1-9.');
    expect(await sync(two)).toMatch(/: pushed 1 message \(1 conversation\); /);
    expect(await sync(one)).toMatch(/: pulled 1 message \(1 conversation\); /);
    await open(one, scratch);
    one.once('dialog', (d) => { void d.accept(); });
    await one.click('#delete-conversation');
    await expect(one.locator('#conversations')).not.toContainText(scratch);
    expect(await sync(one)).toMatch(/: removed 1 forgotten \(1 conversation\); /);
    expect(await sync(two)).toMatch(new RegExp(`: removed 1 forgotten \\(1 conversation\\); .* "${scratch}" was forgotten on another device\\.$`));
    await expect(two.locator('#conversations button.current')).toHaveText(`${id} (44)`);
    await expect(two.locator('#conversations')).not.toContainText(scratch);
    await expect(two.locator('#conversations')).toContainText(`${id} (44)`);

    // Failures, in words: a refused token, and an edge that is down (named by its URL). Nothing changes.
    await saveSync(two, SYNC_URL, `${EDGE_TOKENS.alice}-wrong`);
    expect(await sync(two)).toBe(`Sync failed: the token was refused by ${SYNC_URL}. Check the sync token in Settings; nothing was read or stored.`);
    await expect(two.locator('#sync-status')).toHaveAttribute('data-code', 'UNAUTHENTICATED');
    const dead = createServer();
    await new Promise<void>((ok) => dead.listen(0, '127.0.0.1', ok));
    const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/v1/pagewise/sync`;
    await new Promise<void>((ok) => dead.close(() => ok()));
    phone.allowed.push(deadUrl);
    await saveSync(two, deadUrl, EDGE_TOKENS.alice);
    const down2 = await sync(two);
    expect(down2).toContain(`Sync failed: could not reach ${deadUrl}. Is the edge running`);
    expect(down2).toContain('PAGEWISE_ALLOWED_ORIGINS');
    await expect(two.locator('#sync-status')).toHaveAttribute('data-code', 'STORAGE_UNAVAILABLE');
    await shot(phone, 'sync-3-edge-down-1400px');
    await saveSync(two, SYNC_URL, EDGE_TOKENS.alice);
    expect(await sync(two)).toMatch(/: already in sync: nothing to move; /);
    await open(two, id);
    expect(await shown(two)).toEqual(both);

    // 600 px: the button and what it said are at the top, nothing overflows; the settings show the sync fields.
    await two.setViewportSize({ width: 600, height: 900 });
    expect(await two.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    expect((await two.locator('#sync').boundingBox())!.y).toBeLessThan(300);
    await expect(two.locator('#sync-status')).toBeInViewport();
    await shot(phone, 'sync-4-phone-600px');
    await two.click('#settings-panel summary');
    expect(await two.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    await shot(phone, 'sync-5-settings-600px', true);
    expect(laptop.external, 'requests outside the local servers').toEqual([]);
    expect(phone.external, 'requests outside the local servers').toEqual([]);
  } finally {
    for (const p of [laptop, phone]) {
      await p.page.waitForLoadState().then(() => wipe(p.page)).catch(() => undefined);
      await p.context.close();
    }
  }
});
