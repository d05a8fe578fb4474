import type { Page } from '@playwright/test';
import { EXAMPLE } from '../../demo/example.js';
import { expect, test } from './fixtures.js';

// Every wait is on the page's state; its timeout (the config's, or MODEL_LOAD) is a safety net for a busy machine, not
// how long a step should take.
const MODEL_LOAD = { timeout: 240_000 };

/** The model status line each time it changed, with body[data-model] then (recorded from the page's first script on). */
async function recordModelStatus(page: Page): Promise<() => Promise<{ text: string; state: string }[]>> {
  await page.addInitScript(() => {
    if (typeof document === 'undefined') return;
    const seen: { text: string; state: string }[] = ((globalThis as any).__modelStatus = []);
    new MutationObserver(() => {
      const text = document.getElementById('model')?.textContent ?? '';
      const state = document.body?.dataset.model ?? '';
      if (text && (seen.at(-1)?.text !== text || seen.at(-1)?.state !== state)) seen.push({ text, state });
    }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-model'] });
  });
  return () => page.evaluate(() => (globalThis as any).__modelStatus as { text: string; state: string }[]);
}

/** The provider options whose text does not fit in the select's box (its padding and the arrow's room left out). */
const cutProviders = (page: Page) => page.locator('select[name="provider"]').evaluate((s: HTMLSelectElement) => {
  const style = getComputedStyle(s);
  const ctx = document.createElement('canvas').getContext('2d')!;
  ctx.font = style.font;
  // Chromium keeps about 20 px of a menu list for its arrow; 16 px is left out, so only a clearly cut name counts.
  const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16;
  return [...s.options].filter((o) => ctx.measureText(o.text).width > room).map((o) => o.text);
});

test('the demo\'s first load: the model status tells the load part by part and ready only when it is, no request answers 404, a favicon, provider names whole at 1,400 and 600 px', async ({ page, external: _ }) => {
  test.setTimeout(600_000);
  const statuses = await recordModelStatus(page);
  // Every response of the page and its workers (Playwright follows dedicated workers, nested ones too).
  const missing: string[] = [];
  page.context().on('response', (r) => { if (r.status() === 404) missing.push(new URL(r.url()).pathname); });
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto('/demo/');
  await expect(page.locator('body[data-model="ready"]')).toBeAttached(MODEL_LOAD);
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();

  // The status line: loading, file by file (the weights' download shown while it happens), never 100% or ready before
  // the model is; ready once it is.
  const seen = await statuses();
  const loading = seen.slice(0, -1);
  expect(seen.at(-1)).toEqual({ text: expect.stringMatching(/^embedding model: ready \(/), state: 'ready' });
  for (const s of loading) {
    expect(s.text).toMatch(/^embedding model: (waiting|loading)/);
    expect(s.text).not.toMatch(/100%|ready/);
    expect(s.state).not.toBe('ready');
  }
  expect(loading.some((s) => /model_quantized\.onnx ([1-9]|[1-9]\d)%$/.test(s.text)), JSON.stringify(loading.map((s) => s.text))).toBe(true);

  // Settings: every provider's name whole in its select, at 1,400 px and at 600 px, and nothing wider than the page.
  await page.click('#settings-panel summary');
  for (const width of [1400, 600]) {
    await page.setViewportSize({ width, height: 900 });
    expect(await cutProviders(page), `${width} px`).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), `${width} px`).toBeLessThanOrEqual(0);
  }
  expect(missing).toEqual([]);

  // The favicon: the page's icons and /favicon.ico itself (what a browser asks for without a link) are served.
  const icons = await page.locator('link[rel="icon"]').evaluateAll((ls) => ls.map((l) => (l as HTMLLinkElement).href));
  expect(icons.length).toBeGreaterThan(0);
  for (const url of [...icons, '/favicon.ico']) {
    const response = await page.request.get(url);
    expect(response.status(), url).toBe(200);
    expect(response.headers()['content-type'], url).toMatch(/^image\//);
  }
});

test('the demo offline, after the 10-message example: Topics names what was talked about, and the answer from memory quotes a recalled question', async ({ page, external: _ }) => {
  test.setTimeout(600_000);
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto('/demo/');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await expect(page.locator('#mode')).toContainText('offline');
  const stored = page.locator('#turns li:not(.live)');
  await page.click('#example');
  await expect(stored).toHaveCount(EXAMPLE.length + 1);
  await expect(page.locator('#example')).toBeEnabled();

  // Each subject was said once (a trip to Japan, Kyoto's temples, a Postgres migration, a dog, a sister moving): each
  // is one of the topics, not only the one the question came back to.
  const topics = page.locator('#topics li');
  await expect(topics.filter({ hasText: /^sister · 2 exchanges · / })).toHaveCount(1);
  for (const tag of ['japan', 'kyoto', 'postgres', 'dog']) await expect(topics.filter({ hasText: new RegExp(`^${tag} · 1 exchange · last at #\\d+$`) }), tag).toHaveCount(1);

  // "What did I say about my dog?": the line that said it was a question (it asked for tips), and it is the answer.
  await page.fill('#input', 'What did I say about my dog?');
  await page.click('#send');
  await expect(page.locator('body')).toHaveAttribute('data-send', /^(sent|failed)$/);
  await expect(page.locator('#send-error')).toHaveText('');
  await expect(page.locator('#turns li.live')).toContainText('From memory: user: My dog Biscuit hates thunderstorms, any tips to calm him?');
});

test('the demo\'s usage and health panel: after a question, the figures memory.stats() gives for the conversation', async ({ page, external: _ }) => {
  test.setTimeout(600_000);
  await page.goto('/demo/');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await page.click('#example');
  await expect(page.locator('#example')).toBeEnabled();
  await page.fill('#input', 'What did I say about my dog?');
  await page.click('#send');
  await expect(page.locator('body')).toHaveAttribute('data-send', /^(sent|failed)$/);
  await expect(page.locator('#send-error')).toHaveText('');
  await page.click('#health-panel summary');
  const figure = (name: string) => page.locator(`#health tr[data-figure="${name}"] td`);
  // The example asks its questions through onMessageInbound too: every one is counted, and each hook has its latency.
  await expect(figure('requests')).toHaveText(/^[1-9]\d*$/);
  await expect(figure('injected')).toHaveText(/^[\d,]+ \(recall [\d,]+ · summaries [\d,]+ · topics [\d,]+ · web 0\)$/);
  await expect(figure('saved')).toHaveText(/^[\d,]+ of [1-9][\d,]* the whole history would have cost$/);
  await expect(figure('inbound')).toHaveText(/^p50 [\d.]+ ms · p95 [\d.]+ ms · max [\d.]+ ms \([1-9][\d,]* calls\)$/);
  await expect(figure('turn')).toHaveText(/^p50 [\d.]+ ms · p95 [\d.]+ ms · max [\d.]+ ms \([1-9][\d,]* calls\)$/);
  // The demo asks for the turns of a conversation before anything is stored in it: those refusals are counted, and
  // nothing else failed.
  await expect(figure('errors')).toHaveText(/^(none|[a-zA-Z]+ CONVERSATION_NOT_FOUND ×\d+( · [a-zA-Z]+ CONVERSATION_NOT_FOUND ×\d+)*)$/);
  await expect(figure('bytes')).toHaveText(/^[\d.]+ KiB in this conversation · [\d.]+ (KiB|MiB) the whole database$/);
  await expect(page.locator('#health')).toContainText('Retention: nothing removed');
});
