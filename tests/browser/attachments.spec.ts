// Images in the demo, end to end in Chromium: attached (file input) and pasted into the composer, sent offline and
// stored on OPFS, shown in the chat and in the inspector's "Messages sent to the model" (a line, a thumbnail, never
// base64), still there after a reload, sent to an OpenAI-compatible endpoint as image_url parts; a refused file
// (too large, not an image, empty) says why in plain words and leaves the composer as it was.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from '@playwright/test';
import { b64, png } from '../fixtures/media.js';
import { expect, test } from './fixtures.js';

async function wipeDemo(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
    indexedDB.deleteDatabase('keyval-store');
  });
}

/** What the demo kept in idb-keyval under `key`, as JSON (bytes written as `bytes(n)`, so that they show). */
const kept = (page: Page, key: string) => page.evaluate((k) => new Promise<string>((ok, fail) => {
  const open = indexedDB.open('keyval-store');
  open.onerror = () => fail(open.error);
  open.onsuccess = () => {
    const get = open.result.transaction('keyval').objectStore('keyval').get(k);
    get.onerror = () => fail(get.error);
    get.onsuccess = () => { ok(JSON.stringify(get.result, (_, v: unknown) => (v instanceof Uint8Array || v instanceof ArrayBuffer ? `bytes(${v.byteLength})` : v))); open.result.close(); };
  };
}), key);

// Real, decodable PNGs (tests/fixtures/media.ts): each image's natural width tells which one a thumbnail shows.
const CAT = png(64, 48, 3, 'cat');
const GARDEN = png(40, 30, 9);
const VIEW = png(50, 20, 5);
const SKETCH = '<svg xmlns="http://www.w3.org/2000/svg" width="30" height="20"><rect width="30" height="20" fill="teal"/></svg>';
const file = (name: string, bytes: Uint8Array | string, mimeType = 'image/png') => ({ name, mimeType, buffer: Buffer.from(bytes) });

test('images in the demo: attached and pasted, shown in the chat and the inspector, kept across a reload, sent to the model as image_url; a refused file keeps the composer', async ({ page, external: _ }, testInfo) => {
  // The model endpoint: a local server speaking OpenAI's streaming protocol, recording each request's body.
  const asked: string[] = [];
  const llm = createServer((req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'content-type, authorization', 'access-control-allow-methods': 'POST, OPTIONS' };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors).end(); return; }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => { chunks.push(c); });
    req.on('end', () => {
      asked.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
      for (const w of 'What a view over the river.'.split(' ')) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `${w} ` } }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((ok) => llm.listen(0, '127.0.0.1', ok));
  const llmBase = `http://127.0.0.1:${(llm.address() as AddressInfo).port}`;
  await page.context().route((url) => url.href.startsWith(llmBase), (route) => route.continue());
  await page.setViewportSize({ width: 1400, height: 900 });
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  const ready = () => expect(page.locator('body[data-ready="true"]')).toBeAttached();
  const stored = page.locator('#turns li:not(.live)');
  const pending = page.locator('#pending li');
  const sendError = page.locator('#send-error');
  await page.goto('/demo/');
  await wipeDemo(page);
  await page.reload();
  try {
    await ready();
    await expect(page.locator('#mode')).toContainText('offline');
    await expect(page.locator('#attach')).toHaveAttribute('accept', 'image/*');
    await expect(page.locator('#pending')).toBeHidden();

    // Attached with the file input: a thumbnail of the very file, named, with a remove button that works from the
    // keyboard (removed, then attached again).
    await page.setInputFiles('#attach', file('cat.png', CAT));
    await expect(pending).toHaveCount(1);
    await expect(pending.locator('img')).toHaveAttribute('alt', 'cat.png');
    await expect(pending.locator('img')).toHaveJSProperty('naturalWidth', 64);
    await pending.getByRole('button', { name: 'Remove cat.png' }).focus();
    await page.keyboard.press('Enter');
    await expect(pending).toHaveCount(0);
    await expect(page.locator('#pending')).toBeHidden();
    await page.setInputFiles('#attach', file('cat.png', CAT));
    await expect(pending).toHaveCount(1);

    // Sent offline: stored with its image; the chat shows the turn's text (with its reference line) and the image.
    await page.fill('#input', 'This is my cat Miso on the sofa.');
    await page.click('#send');
    await expect(stored).toHaveCount(1);
    await expect(page.locator('#turns li.live')).toContainText('not stored');
    await expect(stored.first()).toContainText('This is my cat Miso on the sofa.');
    await expect(stored.first()).toContainText('[image "cat.png" (image/png, 9 KB)]');
    const catInChat = stored.first().locator('img.thumb');
    await expect(catInChat).toHaveAttribute('alt', 'cat.png');
    await expect(catInChat).toHaveJSProperty('naturalWidth', 64);
    await expect(pending).toHaveCount(0);
    await expect(page.locator('#input')).toHaveValue('');
    // The inspector: the message's text, the attachment as one line (64×48 px: one OpenAI tile, 85 + 170) and its
    // thumbnail; no base64 anywhere on the page.
    const sent = page.locator('#sent');
    await expect(sent).toContainText('This is my cat Miso on the sofa.');
    await expect(sent.locator('.attachment-line')).toHaveText(['[image cat.png, image/png, 9 KB, 255 tokens]']);
    await expect(sent.locator('img.thumb')).toHaveJSProperty('naturalWidth', 64);
    const messageRow = page.locator('#manifest tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^message$/ }) });
    expect(Number(await messageRow.locator('td').nth(1).textContent())).toBeGreaterThan(255);
    await expect(page.locator('#legend .estimated')).toHaveCount(0);
    expect(await page.content()).not.toContain(b64(CAT).slice(0, 60));
    await shot('1-image-sent-offline');

    // Pasted into the textarea (a DataTransfer holding a File, as a browser's paste gives it): attached, not pasted
    // as text; sent alone, with no text.
    await page.fill('#input', '');
    await page.locator('#input').evaluate((textarea, bytes) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], 'garden.png', { type: 'image/png' }));
      textarea.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, [...GARDEN]);
    await expect(pending).toHaveCount(1);
    await expect(pending.locator('img')).toHaveAttribute('alt', 'garden.png');
    await expect(pending.locator('img')).toHaveJSProperty('naturalWidth', 40);
    await expect(page.locator('#input')).toHaveValue('');
    await page.click('#send');
    await expect(stored).toHaveCount(2);
    await expect(stored.nth(1)).toContainText('[image "garden.png" (image/png,');
    await expect(stored.nth(1).locator('img.thumb')).toHaveJSProperty('naturalWidth', 40);
    await expect(pending).toHaveCount(0);

    // After a reload (OPFS): both images are still shown, read back from the memory; the kept inspection of the first
    // message shows its image too, and idb-keyval holds no bytes (only the attachment's id).
    await page.reload();
    await ready();
    await expect(stored).toHaveCount(2);
    await expect(stored.first().locator('img.thumb')).toHaveJSProperty('naturalWidth', 64);
    await expect(stored.nth(1).locator('img.thumb')).toHaveJSProperty('naturalWidth', 40);
    await stored.first().locator('button.inspect').click();
    await expect(sent.locator('.attachment-line')).toHaveText(['[image cat.png, image/png, 9 KB, 255 tokens]']);
    await expect(sent.locator('img.thumb')).toHaveJSProperty('naturalWidth', 64);
    const inspections = await kept(page, 'pagewise-demo-inspect:demo');
    expect(inspections).toContain('cat.png');
    expect(inspections).toContain('garden.png');
    expect(inspections).not.toContain('bytes(');
    expect(inspections).not.toContain(b64(CAT).slice(0, 60));
    expect(inspections).not.toContain(b64(GARDEN).slice(0, 60));

    // Refused: a file over the 20 MiB cap. The reason in plain words, naming the file; the text and the image stay.
    await page.fill('#input', 'Here is the scan of the lease.');
    await page.setInputFiles('#attach', file('lease-scan.png', new Uint8Array(21 * 1024 * 1024)));
    await expect(pending).toHaveCount(1);
    await page.click('#send');
    const tooLarge = sendError.locator('span[data-code="ATTACHMENT_TOO_LARGE"]');
    await expect(tooLarge).toContainText('"lease-scan.png" is 21.0 MB: too large to send (one attachment may be at most 20.0 MB).');
    await expect(tooLarge).toContainText('Your text and images are kept.');
    await expect(sendError).not.toContainText('[pagewise]');
    await expect(sendError).not.toContainText('content[');
    await expect(page.locator('#input')).toHaveValue('Here is the scan of the lease.');
    await expect(pending.locator('img')).toHaveAttribute('alt', 'lease-scan.png');
    await expect(stored).toHaveCount(2);
    // Not an image: refused as it is attached; what was in the composer stays.
    await page.setInputFiles('#attach', file('notes.txt', 'call the landlord', 'text/plain'));
    await expect(sendError).toContainText('"notes.txt" is not an image (text/plain)');
    await expect(pending).toHaveCount(1);
    await expect(page.locator('#input')).toHaveValue('Here is the scan of the lease.');
    // An empty file: the engine's INVALID_CONTENT, said with the file's name.
    await pending.getByRole('button', { name: 'Remove lease-scan.png' }).click();
    await page.setInputFiles('#attach', file('blank.png', new Uint8Array(0)));
    await page.click('#send');
    await expect(sendError.locator('span[data-code="INVALID_CONTENT"]')).toContainText('"blank.png" is empty');
    await expect(page.locator('#input')).toHaveValue('Here is the scan of the lease.');
    await expect(pending.locator('img')).toHaveAttribute('alt', 'blank.png');
    await expect(stored).toHaveCount(2);
    await shot('2-refused');
    await pending.getByRole('button', { name: 'Remove blank.png' }).click();

    // An image no documented rule sizes (an SVG: pagewise reads no pixels from it) is counted as an estimate, and the
    // legend and the line say so.
    await page.fill('#input', 'A sketch of the shelf.');
    await page.setInputFiles('#attach', file('shelf.svg', SKETCH, 'image/svg+xml'));
    await page.click('#send');
    await expect(stored).toHaveCount(3);
    await expect(sendError).toHaveText('');
    await expect(page.locator('#legend .estimated')).toContainText(/of which [1-9][\d,]* estimated/);
    await expect(sent.locator('.attachment-line').last()).toHaveText(/^\[image shelf\.svg, image\/svg\+xml, \d+ B, ~[\d,]+ tokens \(estimate\)\]$/);
    await expect(stored.nth(2).locator('img.thumb')).toHaveJSProperty('naturalWidth', 30);

    // An OpenAI-compatible endpoint (set in the settings form): the image reaches it as an image_url part whose
    // data: URL holds the very bytes; the reply is streamed and stored.
    await page.click('#settings-panel summary');
    await page.selectOption('select[name="provider"]', 'openai');
    await page.fill('input[name="baseUrl"]', `${llmBase}/v1`);
    await page.fill('input[name="model"]', 'test-model');
    await page.click('#settings button[type="submit"]');
    await expect(page.locator('#settings-error')).toHaveText('');
    await expect(page.locator('#mode')).toContainText('OpenAI-compatible test-model');
    await page.click('#settings-panel summary');
    await ready();
    await page.fill('#input', 'The view from our balcony.');
    await page.setInputFiles('#attach', file('view.png', VIEW));
    await page.click('#send');
    await expect(stored).toHaveCount(5);
    await expect(stored.last()).toContainText('What a view over the river.');
    await expect(stored.nth(3).locator('img.thumb')).toHaveJSProperty('naturalWidth', 50);
    expect(asked).toHaveLength(1);
    const body = JSON.parse(asked[0]!) as { messages: { role: string; content: string | { type: string; text?: string; image_url?: { url: string } }[] }[] };
    const last = body.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(Array.isArray(last.content)).toBe(true);
    const parts = last.content as { type: string; text?: string; image_url?: { url: string } }[];
    expect(parts[0]).toEqual({ type: 'text', text: 'The view from our balcony.' });
    const image = parts.find((p) => p.type === 'image_url');
    expect(image?.image_url?.url).toMatch(/^data:image\/png;base64,/);
    expect(Buffer.from(image!.image_url!.url.split(',')[1]!, 'base64').equals(Buffer.from(VIEW))).toBe(true);
    // Every image sent is one of this conversation's PNGs (the SVG, which neither provider takes, goes as its line).
    const known = [CAT, GARDEN, VIEW].map((b) => Buffer.from(b));
    for (const m of body.messages) {
      for (const p of Array.isArray(m.content) ? m.content : []) {
        if (p.type === 'image_url') expect(known.some((k) => k.equals(Buffer.from(p.image_url!.url.split(',')[1]!, 'base64')))).toBe(true);
      }
    }
    await expect(sent.locator('.attachment-line').last()).toHaveText('[image view.png, image/png, 3 KB, 255 tokens]');
    await shot('3-image-sent-to-the-model');
  } finally {
    await page.waitForLoadState().then(() => wipeDemo(page)).catch(() => undefined);
    await new Promise<void>((ok) => llm.close(() => ok()));
  }
});
