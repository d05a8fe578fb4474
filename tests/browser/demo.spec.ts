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
  await page.goto('/');
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
    await tab.click('#seed');
    await expect(tab.locator('#turns li')).toHaveCount(42);
    await tab.click('#seed');
    await expect(tab.locator('#turns li')).toHaveCount(82);
    await tab.fill('input[name="contextWindow"]', '1000');
    await tab.click('#settings button[type="submit"]');
    await expect(tab.locator('body[data-ready="true"]')).toBeAttached();
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
    await expect(tab.locator('#turns li')).toHaveCount(84);
    await expect(tab.locator('#turns li').first()).toContainText('Priya moves to Lisbon');
  } finally {
    await wipeDemo(tab);
  }
});
