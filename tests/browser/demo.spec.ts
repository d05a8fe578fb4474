import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';

async function wipeDemo(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
    indexedDB.deleteDatabase('keyval-store');
  });
}

test('the demo chats offline, shows budget and manifest, and keeps history across a reload', async ({ page, external: _ }, testInfo) => {
  test.setTimeout(180_000);
  // First load: what the browser transfers (the model and the ONNX runtime included), and which files it asks for.
  const loaded = new Set<string>();
  const sizes = new Map<string, number>();
  page.context().on('requestfinished', (r) => {
    const path = new URL(r.url()).pathname;
    loaded.add(path);
    void r.sizes().then((s) => { sizes.set(`${path} #${sizes.size}`, s.responseBodySize + s.responseHeadersSize); }).catch(() => undefined);
  });
  await page.goto('/');
  await expect(page.locator('body[data-model="ready"]')).toBeAttached({ timeout: 120_000 });
  await expect(page.locator('#model')).toHaveText(/ready/);
  const bytes = [...sizes.values()].reduce((a, b) => a + b, 0);
  const firstLoad = `demo first load: ${(bytes / 1e6).toFixed(1)} MB transferred (${loaded.size} files), the model and the ONNX runtime included`;
  test.info().annotations.push({ type: 'figure', description: firstLoad });
  console.log(firstLoad);
  // Emit only what a page loads: every WASM file and every model file the build holds was requested.
  const { readdirSync, statSync } = await import('node:fs');
  const { join, relative } = await import('node:path');
  const root = join(import.meta.dirname, '../../.demo-dist');
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
  const heavy = walk(root).map((f) => `/${relative(root, f)}`).filter((f) => f.endsWith('.wasm') || f.startsWith('/pagewise/'));
  expect(heavy.length).toBeGreaterThan(0);
  expect(heavy.filter((f) => !loaded.has(f))).toEqual([]);
  await expect(page).toHaveURL(/\/demo\/$/);
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await page.close();
  const tab = await page.context().newPage();
  await tab.goto('/demo/');
  await wipeDemo(tab);
  await tab.reload();
  try {
    await expect(tab.locator('body[data-ready="true"]')).toBeAttached();
    await expect(tab.locator('#status')).toHaveText(/ready/);
    const send = async (text: string) => {
      const before = await tab.locator('#turns li').count();
      await tab.fill('#input', text);
      await tab.click('#send');
      await expect(tab.locator('#turns li')).toHaveCount(before + 2);
    };
    await send('My sister Priya moves to Lisbon on the 14th of March.');
    // 40 turns in one call, the second crossing the hard threshold (compaction inside the call) while the model
    // worker embeds beside it: generous timeouts, this test is about what happens, not how fast (see npm run bench).
    await tab.click('#seed');
    await expect(tab.locator('#turns li')).toHaveCount(42, { timeout: 30_000 });
    await tab.click('#seed');
    await expect(tab.locator('#turns li')).toHaveCount(82, { timeout: 30_000 });
    await tab.fill('input[name="contextWindow"]', '1000');
    await tab.click('#settings button[type="submit"]');
    await expect(tab.locator('body[data-ready="true"]')).toBeAttached();
    // A paraphrase sharing no content word with what was said (sister → sibling, moves → relocating, Lisbon →
    // Portugal): found by the model once the turns are embedded.
    await expect(tab.locator('body')).toHaveAttribute('data-embedded', /^(\d+)\/\1$/, { timeout: 120_000 });
    await send('Which date is my sibling relocating to Portugal?');
    await expect(tab.locator('#prepend')).toContainText('14th of March');
    await expect(tab.locator('#manifest tbody tr').filter({ hasText: 'meaning' })).not.toHaveCount(0);
    await send('When does Priya move to Lisbon?');
    await expect(tab.locator('#prepend')).toContainText('<prior-conversation>');
    await expect(tab.locator('#prepend')).toContainText('14th of March');
    await expect(tab.locator('#manifest tbody tr').filter({ hasText: 'recall' })).not.toHaveCount(0);
    await expect(tab.locator('#turns li').last()).toContainText('From memory');
    await expect(tab.locator('#turns li.recalled')).not.toHaveCount(0);
    await tab.screenshot({ path: testInfo.outputPath('demo.png'), fullPage: true });

    await tab.reload();
    await expect(tab.locator('#status')).toHaveText(/ready/);
    await expect(tab.locator('input[name="contextWindow"]')).toHaveValue('1000');
    await expect(tab.locator('#turns li')).toHaveCount(86);
    await expect(tab.locator('#turns li').first()).toContainText('Priya moves to Lisbon');
  } finally {
    await wipeDemo(tab);
  }
});
