import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';

// The demo's passphrase lock, in Chromium on OPFS: encrypt the memory from Settings, lock it, a wrong passphrase and
// the right one, a reload that asks for it, then encryption removed. Every wait is on the page's state (body's
// data-ready, data-lock, data-rekey, data-send); the timeouts are safety nets for a busy machine.
const SECRET = 'My locker combination is 31-7-22.';
const WORD = '31-7-22';
const PASSPHRASE = 'correct horse battery staple';
const WRONG = 'correct horse battery stable';
const NEW_PASSPHRASE = 'staple horse battery correct';

/**
 * What this origin keeps: every byte of the demo's OPFS directory (as text), IndexedDB's keyval store (the demo's
 * records and settings), localStorage and sessionStorage, and the page's URL.
 */
const kept = (page: Page) => page.evaluate(async () => {
  const root = await navigator.storage.getDirectory();
  let files = '';
  const walk = async (dir: FileSystemDirectoryHandle): Promise<void> => {
    for await (const [, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
      if (handle.kind === 'directory') { await walk(handle as FileSystemDirectoryHandle); continue; }
      const data = new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer());
      for (let i = 0; i < data.length; i += 65_536) files += String.fromCharCode(...data.subarray(i, i + 65_536));
    }
  };
  await walk(await root.getDirectoryHandle('.pagewise-demo'));
  const db = await new Promise<IDBDatabase>((ok, fail) => { const r = indexedDB.open('keyval-store'); r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  const idb = !db.objectStoreNames.contains('keyval') ? '' : await new Promise<string>((ok, fail) => {
    const r = db.transaction('keyval').objectStore('keyval').getAll();
    r.onsuccess = () => ok(JSON.stringify(r.result));
    r.onerror = () => fail(r.error);
  });
  db.close();
  return { files, idb, web: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }), url: location.href };
});

/** The demo's OPFS directory and records removed, from a page of the origin that holds no database open. */
async function wipeDemo(page: Page): Promise<void> {
  await page.goto('/tests/browser/harness/');
  // The demo's worker lets its files go as its page goes: removed once it has.
  await expect.poll(() => page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    return root.removeEntry('.pagewise-demo', { recursive: true }).then(() => true, (e: DOMException) => e.name === 'NotFoundError');
  })).toBe(true);
  await page.evaluate(() => new Promise((done) => { const r = indexedDB.deleteDatabase('keyval-store'); r.onsuccess = r.onerror = r.onblocked = done; }));
}

test('the demo\'s lock: encrypt with a passphrase, lock (nothing shown), a wrong passphrase, the right one, a reload that asks for it, encryption removed', async ({ page, external: _ }, testInfo) => {
  test.setTimeout(600_000);
  // What any console said, the workers' included: a passphrase is never logged.
  const logged: string[] = [];
  page.on('console', (m) => logged.push(m.text()));
  page.on('worker', (w) => w.on('console', (m) => logged.push(m.text())));
  await page.setViewportSize({ width: 1400, height: 900 });
  await wipeDemo(page);
  const body = page.locator('body');
  const stored = page.locator('#turns li:not(.live)');
  const field = page.locator('#unlock-passphrase');
  const prompt = page.locator('#lock');
  try {
    await page.goto('/demo/');
    await expect(page.locator('body[data-ready="true"]')).toBeAttached();
    await expect(body).toHaveAttribute('data-lock', 'open');
    await expect(page.locator('#status')).toContainText('kept across reloads · not encrypted');
    await expect(prompt).toBeHidden();

    // A turn, plainly stored: its words are in the files and in the demo's records (what the scans below look for).
    await page.fill('#input', SECRET);
    await page.click('#send');
    await expect(body).toHaveAttribute('data-send', 'sent');
    await expect(stored).toHaveCount(1);
    await expect(stored.first()).toContainText(SECRET);
    const plain = await kept(page);
    expect(plain.files).toContain(WORD);
    expect(plain.idb).toContain(WORD);

    // Encrypt: two entries that differ are refused (and cleared); the same twice encrypts in place.
    await page.click('#settings-panel summary');
    await expect(page.locator('#encryption-note')).toContainText('Not encrypted');
    await expect(page.getByRole('button', { name: 'Lock', exact: true })).toBeHidden();
    await page.getByLabel('new passphrase').fill(PASSPHRASE);
    await page.getByLabel('the same again').fill(`${PASSPHRASE}!`);
    await page.getByLabel('the same again').press('Enter');
    await expect(body).toHaveAttribute('data-rekey', 'failed');
    await expect(page.locator('#encryption-status')).toContainText('differ');
    await expect(page.getByLabel('new passphrase')).toHaveValue('');
    await expect(page.getByLabel('the same again')).toHaveValue('');
    await expect(body).toHaveAttribute('data-encrypted', 'false');
    await page.getByLabel('new passphrase').fill(PASSPHRASE);
    await page.getByLabel('the same again').fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Encrypt with a passphrase' }).click();
    await expect(body).toHaveAttribute('data-rekey', 'done');
    await expect(body).toHaveAttribute('data-encrypted', 'true');
    await expect(page.locator('#status')).toContainText('kept across reloads · encrypted with a passphrase');
    await expect(page.getByRole('button', { name: 'Change passphrase' })).toBeVisible();
    await expect(page.getByLabel('new passphrase')).toHaveValue('');
    await expect(page.getByLabel('the same again')).toHaveValue('');
    await expect(stored).toHaveCount(1);
    await page.locator('#encryption').screenshot({ path: testInfo.outputPath('encryption-settings.png') });
    // Nothing of the turn in the files or the records any more; the passphrase nowhere the origin keeps things.
    const sealed = await kept(page);
    expect(sealed.files.length).toBeGreaterThan(4096);
    for (const word of [WORD, 'locker']) expect(sealed.files).not.toContain(word);
    expect(sealed.idb).not.toContain(WORD);
    for (const place of [sealed.files, sealed.idb, sealed.web, sealed.url]) expect(place).not.toContain('horse battery');

    // Lock: the memory closes, the page holds nothing of the conversation, the prompt has the focus.
    await page.getByRole('button', { name: 'Lock', exact: true }).click();
    await expect(body).toHaveAttribute('data-lock', 'locked');
    await expect(prompt).toBeVisible();
    await expect(field).toBeFocused();
    await expect(page.locator('main')).toBeHidden();
    await expect(page.locator('#status')).toContainText('locked');
    await expect(body).not.toContainText(WORD);
    await expect(page.locator('#input')).toHaveValue('');
    await page.screenshot({ path: testInfo.outputPath('lock-prompt.png') });

    // A wrong passphrase: said so, the field cleared and focused, still locked.
    await field.fill(WRONG);
    await field.press('Enter');
    await expect(page.locator('#unlock-error [data-code="WRONG_KEY"]')).toContainText('does not open this memory');
    await expect(body).toHaveAttribute('data-lock', 'locked');
    await expect(field).toHaveValue('');
    await expect(field).toBeFocused();
    await expect(body).not.toContainText(WORD);

    // The right one: the conversation is back, and the message box has the focus.
    await field.fill(PASSPHRASE);
    await field.press('Enter');
    await expect(page.locator('body[data-ready="true"][data-lock="open"]')).toBeAttached();
    await expect(prompt).toBeHidden();
    await expect(stored).toHaveCount(1);
    await expect(stored.first()).toContainText(SECRET);
    await expect(page.locator('#status')).toContainText('encrypted with a passphrase');
    await expect(page.locator('#input')).toBeFocused();
    expect(await field.inputValue()).toBe('');

    // A reload asks for it (nothing shown before), and it opens the memory.
    await page.reload();
    await expect(body).toHaveAttribute('data-lock', 'locked');
    await expect(prompt).toBeVisible();
    await expect(field).toBeFocused();
    await expect(body).not.toContainText(WORD);
    await field.fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await expect(page.locator('body[data-ready="true"][data-lock="open"]')).toBeAttached();
    await expect(stored).toHaveCount(1);
    await expect(stored.first()).toContainText(SECRET);

    // A new passphrase. New memory settings then restart the engine, which asks for it: the old one no longer opens it.
    await page.click('#settings-panel summary');
    await page.getByLabel('new passphrase').fill(NEW_PASSPHRASE);
    await page.getByLabel('the same again').fill(NEW_PASSPHRASE);
    await page.getByRole('button', { name: 'Change passphrase' }).click();
    await expect(body).toHaveAttribute('data-rekey', 'done');
    await expect(page.locator('#encryption-status')).toContainText('Passphrase changed');
    await page.fill('input[name="contextWindow"]', '1000');
    await page.click('#settings button[type="submit"]');
    await expect(body).toHaveAttribute('data-lock', 'locked');
    await expect(page.locator('#lock-why')).toContainText('settings changed');
    await expect(field).toBeFocused();
    await expect(body).not.toContainText(WORD);
    await field.fill(PASSPHRASE);
    await field.press('Enter');
    await expect(page.locator('#unlock-error [data-code="WRONG_KEY"]')).toBeVisible();
    await field.fill(NEW_PASSPHRASE);
    await field.press('Enter');
    await expect(page.locator('body[data-ready="true"][data-lock="open"]')).toBeAttached();
    await expect(stored).toHaveCount(1);

    // Encryption removed: a plain database again, which a reload opens without asking.
    await expect(page.locator('#settings-panel')).toHaveAttribute('open');
    await page.getByRole('button', { name: 'Remove encryption' }).click();
    await expect(body).toHaveAttribute('data-rekey', 'done');
    await expect(body).toHaveAttribute('data-encrypted', 'false');
    await expect(page.locator('#status')).toContainText('not encrypted');
    await expect(page.getByRole('button', { name: 'Encrypt with a passphrase' })).toBeVisible();
    const decrypted = await kept(page);
    expect(decrypted.files).toContain(WORD);
    for (const place of [decrypted.files, decrypted.idb, decrypted.web, decrypted.url]) expect(place).not.toContain('horse battery');
    await page.reload();
    await expect(page.locator('body[data-ready="true"][data-lock="open"]')).toBeAttached();
    await expect(prompt).toBeHidden();
    await expect(stored).toHaveCount(1);
    await expect(stored.first()).toContainText(SECRET);
    for (const line of logged) expect(line).not.toContain('horse battery');
  } finally {
    // Cleanup must not hide the test's own failure.
    await page.waitForLoadState().then(() => wipeDemo(page)).catch(() => undefined);
  }
});
