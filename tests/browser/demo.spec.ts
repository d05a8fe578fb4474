import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';

async function wipeDemo(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
    indexedDB.deleteDatabase('keyval-store');
  });
}

test('the demo: offline and streamed chat, settings checked before saving, nothing typed lost, the inspector, replay, 1,400 px and narrow', async ({ page, external: _ }, testInfo) => {
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
  await tab.setViewportSize({ width: 1400, height: 900 });
  // The model endpoint: a local server speaking OpenAI's streaming protocol (the only double: a remote LLM). Its
  // origin is let through; every other non-local request stays blocked by the fixture.
  const asked: string[] = [];
  const llm = createServer((req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'content-type, authorization', 'access-control-allow-methods': 'POST, OPTIONS' };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors).end(); return; }
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      asked.push(raw);
      const body = JSON.parse(raw) as { messages: { role: string; content: string }[] };
      const knows = JSON.stringify(body.messages).includes('14th of March');
      const words = (knows ? 'Your sister moves to Lisbon on the 14th of March.' : 'I do not know yet.').split(' ');
      res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
      for (const w of words) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `${w} ` } }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((ok) => llm.listen(0, '127.0.0.1', ok));
  const llmBase = `http://127.0.0.1:${(llm.address() as AddressInfo).port}`;
  await tab.context().route((url) => url.href.startsWith(llmBase), (route) => route.continue());
  const shot = (name: string) => tab.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  const overflow = () => tab.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await tab.goto('/demo/');
  await wipeDemo(tab);
  await tab.reload();
  try {
    await expect(tab.locator('body[data-ready="true"]')).toBeAttached();
    await expect(tab.locator('#status')).toHaveText(/ready/);
    await expect(tab.locator('#mode')).toContainText('offline');
    const stored = () => tab.locator('#turns li:not(.live)');
    // Offline: the answer comes from memory, is labelled, and is not stored (only the user's message is).
    await tab.fill('#input', 'My sister Priya moves to Lisbon on the 14th of March.');
    await tab.click('#send');
    await expect(stored()).toHaveCount(1);
    await expect(tab.locator('#turns li.live')).toContainText('not stored');
    await expect(tab.locator('#input')).toHaveValue('');
    await shot('1-offline');
    // 40 turns in one call, the second crossing the hard threshold (compaction inside the call) while the model
    // worker embeds beside it: generous timeouts, this test is about what happens, not how fast (see npm run bench).
    await tab.click('#seed');
    await expect(stored()).toHaveCount(41, { timeout: 30_000 });
    await tab.click('#seed');
    await expect(stored()).toHaveCount(81, { timeout: 30_000 });
    // Settings are checked before they are saved: a bad URL is refused and nothing changes.
    await tab.click('#settings-panel summary');
    await tab.selectOption('select[name="provider"]', 'openai');
    await tab.fill('input[name="baseUrl"]', 'not a url');
    await tab.fill('input[name="model"]', 'test-model');
    await tab.click('#settings button[type="submit"]');
    await expect(tab.locator('#settings-error')).toContainText('not a URL');
    await expect(tab.locator('#mode')).toContainText('offline');
    await tab.fill('input[name="baseUrl"]', `${llmBase}/v1`);
    await tab.fill('input[name="contextWindow"]', '1000');
    await tab.click('#settings button[type="submit"]');
    await expect(tab.locator('#settings-error')).toHaveText('');
    await expect(tab.locator('#mode')).toContainText('OpenAI-compatible test-model');
    await expect(tab.locator('body[data-ready="true"]')).toBeAttached();
    // A message too large for the window is refused with the reason, and stays in the box.
    const long = 'word '.repeat(1920);
    await tab.fill('#input', long);
    await tab.click('#send');
    await expect(tab.locator('#send-error')).toContainText('BUDGET_EXCEEDED');
    await expect(tab.locator('#input')).toHaveValue(long);
    // A paraphrase sharing no content word with what was said (sister → sibling, moves → relocating, Lisbon →
    // Portugal): found by the model once the turns are embedded, sent to the endpoint, the reply streamed and stored.
    await expect(tab.locator('body')).toHaveAttribute('data-embedded', /^(\d+)\/\1$/, { timeout: 120_000 });
    await tab.fill('#input', 'Which date is my sibling relocating to Portugal?');
    await tab.click('#send');
    await expect(stored()).toHaveCount(83, { timeout: 30_000 });
    await expect(stored().last()).toContainText('Your sister moves to Lisbon on the 14th of March.');
    expect(asked.at(-1)).toContain('14th of March');
    await expect(tab.locator('#sent')).toContainText('14th of March');
    await expect(tab.locator('#manifest tbody tr').filter({ hasText: 'meaning' })).not.toHaveCount(0);
    // Scores are readable lines, not JSON; a source id jumps to its turn.
    expect(await tab.locator('#manifest .scores').allTextContents()).not.toContainEqual(expect.stringContaining('{'));
    const link = tab.locator('#manifest .sources a').first();
    const target = await link.getAttribute('title');
    await link.click();
    await expect(tab.locator(`#turn-${target!.replace(/[:.]/g, '\\$&')}`)).toHaveClass(/flash/);
    await expect(tab.locator('#turns li.recalled')).not.toHaveCount(0);
    await expect(tab.locator('#legend')).toContainText('recalled memory');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await shot('2-recall-1400px');
    // Pins: a pinned message is listed and marked.
    await stored().first().locator('button.pin').click();
    await expect(tab.locator('#pins li')).toHaveCount(1);
    await expect(stored().first()).toHaveClass(/pinned/);
    await tab.click('#compact');
    await expect(tab.locator('#compaction')).toContainText(/compacted|nothing/);
    // The seeding crossed the hard threshold: the log shows that compaction.
    await expect(tab.locator('#compaction-log li').filter({ hasText: 'hard' })).not.toHaveCount(0);
    // Each message keeps what was sent with it: the first one's inspector comes back.
    await stored().first().locator('button.inspect').click();
    await expect(tab.locator('#sent')).toContainText('My sister Priya moves to Lisbon on the 14th of March.');
    await expect(tab.locator('#sent')).not.toContainText('sibling');
    await tab.setViewportSize({ width: 600, height: 900 });
    expect(await overflow()).toBeLessThanOrEqual(0);
    await shot('3-narrow');
    await tab.setViewportSize({ width: 1400, height: 900 });

    await tab.reload();
    await expect(tab.locator('#status')).toHaveText(/ready/);
    await expect(tab.locator('input[name="contextWindow"]')).toHaveValue('1000');
    await expect(tab.locator('#mode')).toContainText('OpenAI-compatible');
    await expect(stored()).toHaveCount(83);
    await expect(stored().first()).toContainText('Priya moves to Lisbon');

    // Replay: a LoCoMo-shaped file is stored with a progress bar; asking its question marks its evidence.
    const sessions = { speaker_a: 'Ana', speaker_b: 'Ben', session_1_date_time: '1:56 pm on 8 May, 2023', session_1: [
      { speaker: 'Ana', dia_id: 'D1:1', text: 'I adopted a cat named Miso last week.' },
      { speaker: 'Ben', dia_id: 'D1:2', text: 'Lovely! How is Miso settling in?' },
      ...Array.from({ length: 30 }, (_, i) => ({ speaker: i % 2 ? 'Ben' : 'Ana', dia_id: `D1:${i + 3}`, text: `Other news number ${i} about the garden and the weather.` })),
    ], qa: [{ question: 'What is the name of Ana\'s cat?', answer: 'Miso', evidence: ['D1:1'], category: 4 }] };
    await tab.setInputFiles('#import', { name: 'mini-locomo.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(sessions)) });
    await expect(tab.locator('#import-status')).toContainText('1 questions', { timeout: 30_000 });
    await tab.locator('#questions button').first().click();
    await expect(tab.locator('#import-status')).toContainText('1/1 evidence turns');
    await expect(tab.locator('#turns li.evidence')).toHaveCount(1);
    await shot('4-replay');
  } finally {
    // Cleanup must not hide the test's own failure (a page mid-reload has no context to evaluate in).
    await tab.waitForLoadState().then(() => wipeDemo(tab)).catch(() => undefined);
    await new Promise<void>((ok) => llm.close(() => ok()));
  }
});
