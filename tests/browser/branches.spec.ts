import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';

// The demo's branches: an edited message and a regenerated reply each fork the conversation; the chat shows
// "‹ 2 of 2 ›" beside the message with versions, the arrows switch branch, and recall reads only the branch the user
// is on (the inspector names it). Waits are on what the page shows, never on time: the machine running this is busy.

async function wipeDemo(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
    indexedDB.deleteDatabase('keyval-store');
  });
}

/** A local server speaking OpenAI's streaming protocol: "Reply N to: <the last user message>". */
async function fakeModel() {
  const asked: string[] = [];
  const llm = createServer((req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'content-type, authorization', 'access-control-allow-methods': 'POST, OPTIONS' };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors).end(); return; }
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c; });
    req.on('end', () => {
      asked.push(raw);
      const body = JSON.parse(raw) as { messages: { role: string; content: unknown }[] };
      const question = [...body.messages].reverse().find((m) => m.role === 'user');
      const text = typeof question?.content === 'string' ? question.content : JSON.stringify(question?.content ?? '');
      res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
      for (const w of `Reply ${asked.length} to: ${text}`.split(/(?<= )/)) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: w } }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((ok) => llm.listen(0, '127.0.0.1', ok));
  return { asked, base: `http://127.0.0.1:${(llm.address() as AddressInfo).port}`, close: () => new Promise<void>((ok) => llm.close(() => ok())) };
}

/** An edit whose reply fails (the endpoint is down) changes nothing, and the text typed stays in the editor. */
async function failedEdit(page: Page, llmBase: string): Promise<void> {
  const stored = page.locator('#turns li:not(.live)');
  const turn = (i: number) => stored.nth(i);
  const dead = createServer();
  await new Promise<void>((ok) => dead.listen(0, '127.0.0.1', ok));
  const deadBase = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise<void>((ok) => dead.close(() => ok()));
  await page.context().route((url) => url.href.startsWith(deadBase), (route) => route.continue());
  const endpoint = async (base: string) => {
    await page.click('#settings-panel summary');
    await page.fill('input[name="baseUrl"]', `${base}/v1`);
    await page.click('#settings button[type="submit"]');
    await expect(page.locator('#mode')).toContainText(base);
    await page.click('#settings-panel summary');
  };
  await endpoint(deadBase);
  await turn(2).locator('button.edit').click();
  await turn(2).locator('form.edit textarea').fill('What is my dog called?');
  await turn(2).locator('form.edit button.edit-save').click();
  await expect(turn(2).locator('form.edit .error')).toContainText('Could not reach');
  await expect(turn(2).locator('form.edit textarea')).toHaveValue('What is my dog called?');
  await expect(stored).toHaveCount(4);
  await expect(turn(3)).toContainText('Reply 2 to: What is my cat called?');
  await expect(page.locator('#turns .fork')).toHaveCount(0);
  await turn(2).locator('button.edit-cancel').click();
  await expect(page.locator('#turns form.edit')).toHaveCount(0);
  await endpoint(llmBase);
}

test('the demo: edit a message and regenerate a reply, "2 of 2" with arrows that switch branch, recall reads the branch the user is on', async ({ page, external: _ }, testInfo) => {
  const llm = await fakeModel();
  await page.context().route((url) => url.href.startsWith(llm.base), (route) => route.continue());
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto('/demo/');
  await wipeDemo(page);
  await page.reload();
  try {
    await expect(page.locator('body[data-ready="true"]')).toBeAttached();
    await expect(page.locator('#status')).toHaveText(/ready/);
    // The model: the fake endpoint (the provider alone changes: the worker is not restarted).
    await page.click('#settings-panel summary');
    await page.selectOption('select[name="provider"]', 'openai');
    await page.fill('input[name="baseUrl"]', `${llm.base}/v1`);
    await page.fill('input[name="model"]', 'test-model');
    await page.click('#settings button[type="submit"]');
    await expect(page.locator('#settings-error')).toHaveText('');
    await expect(page.locator('#mode')).toContainText('OpenAI-compatible test-model');
    await page.click('#settings-panel summary');

    const stored = page.locator('#turns li:not(.live)');
    const turn = (i: number) => stored.nth(i);
    const say = async (text: string, count: number) => {
      await page.fill('#input', text);
      await page.click('#send');
      await expect(stored).toHaveCount(count);
      await expect(stored.last()).toContainText(`to: ${text}`);
      await expect(page.locator('#send')).toBeEnabled();
    };
    await say('My cat is called Tom.', 2);
    await say('What is my cat called?', 4);
    await expect(page.locator('#turns .fork')).toHaveCount(0);

    await failedEdit(page, llm.base);

    // Edit the first message: the new version starts the conversation over, on a second branch.
    await turn(0).locator('button.edit').click();
    const editor = turn(0).locator('form.edit');
    await expect(editor.locator('textarea')).toHaveValue('My cat is called Tom.');
    // Cancel leaves everything as it was.
    await editor.locator('button.edit-cancel').click();
    await expect(page.locator('#turns form.edit')).toHaveCount(0);
    await turn(0).locator('button.edit').click();
    await turn(0).locator('form.edit textarea').fill('My cat is called Felix.');
    await page.screenshot({ path: testInfo.outputPath('branches-editor.png') });
    const before = llm.asked.length;
    await turn(0).locator('form.edit button.edit-save').click();
    await expect(turn(0).locator('.fork-count')).toHaveText('2 of 2');
    await expect(stored).toHaveCount(2);
    await expect(turn(0)).toContainText('My cat is called Felix.');
    await expect(turn(1)).toContainText('to: My cat is called Felix.');
    // The old branch is not shown, nor was it sent or recalled: the request knew only the new version.
    await expect(page.locator('#turns')).not.toContainText('Tom');
    await expect(page.locator('#turns')).not.toContainText('What is my cat called?');
    expect(llm.asked.length).toBe(before + 1);
    expect(llm.asked[before]).toContain('Felix');
    expect(llm.asked[before]).not.toContain('Tom');
    await expect(page.locator('#branch')).toContainText('Branch 2 of 2 at message #0');
    await expect(turn(0).locator('.fork-prev')).toBeEnabled();
    await expect(turn(0).locator('.fork-next')).toBeDisabled();
    await page.screenshot({ path: testInfo.outputPath('branches-edit.png') });

    // The left arrow: the first version again, with the rest of its branch.
    await turn(0).locator('.fork-prev').click();
    await expect(turn(0).locator('.fork-count')).toHaveText('1 of 2');
    await expect(stored).toHaveCount(4);
    await expect(turn(0)).toContainText('My cat is called Tom.');
    await expect(turn(2)).toContainText('What is my cat called?');
    await expect(page.locator('#turns')).not.toContainText('Felix');

    // Regenerate the last reply: a second reply to the same question, beside the first.
    await turn(3).locator('button.regenerate').click();
    await expect(turn(3).locator('.fork-count')).toHaveText('2 of 2');
    await expect(stored).toHaveCount(4);
    await expect(turn(3)).toContainText(/Reply \d+ to: What is my cat called\?/);
    const regenerated = (await turn(3).textContent())!;
    expect(regenerated).not.toContain('Reply 2 to:');
    // Its request held the question once, with the branch's first message and not the reply it replaces.
    const last = llm.asked[llm.asked.length - 1]!;
    expect(last.split('What is my cat called?').length - 1).toBe(1);
    expect(last).toContain('Tom');
    expect(last).not.toContain('Reply 2 to:');
    await expect(page.locator('#branch')).toContainText('Branch 2 of 2 at message #3');
    await page.screenshot({ path: testInfo.outputPath('branches-regenerate.png') });
    // The edit's arrows are still there, at 1 of 2.
    await expect(turn(0).locator('.fork-count')).toHaveText('1 of 2');
    await turn(3).locator('.fork-prev').click();
    await expect(turn(3).locator('.fork-count')).toHaveText('1 of 2');
    await expect(turn(3)).toContainText('Reply 2 to: What is my cat called?');
    // The right arrow of the first message: the edited branch again, as it was left.
    await turn(0).locator('.fork-next').click();
    await expect(turn(0).locator('.fork-count')).toHaveText('2 of 2');
    await expect(stored).toHaveCount(2);
    await expect(turn(0)).toContainText('Felix');
    // A reload shows the branch the user was on.
    await page.reload();
    await expect(page.locator('body[data-ready="true"]')).toBeAttached();
    await expect(turn(0).locator('.fork-count')).toHaveText('2 of 2');
    await expect(turn(0)).toContainText('Felix');
  } finally {
    await llm.close();
  }
});

test('the demo offline: an edited message (not the first) forks after the one before it; regenerating needs a model', async ({ page, external: _ }) => {
  await page.goto('/demo/');
  await wipeDemo(page);
  await page.reload();
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  await expect(page.locator('#mode')).toContainText('offline');
  const stored = page.locator('#turns li:not(.live)');
  for (const [i, text] of ['I live in Oslo.', 'I work as a baker.'].entries()) {
    await page.fill('#input', text);
    await page.click('#send');
    await expect(stored).toHaveCount(i + 1);
    await expect(page.locator('#send')).toBeEnabled();
  }
  // Offline no reply is stored, so there is nothing to regenerate.
  await expect(page.locator('#turns .regenerate')).toHaveCount(0);
  await stored.nth(1).locator('button.edit').click();
  await stored.nth(1).locator('form.edit textarea').fill('I work as a carpenter.');
  await stored.nth(1).locator('form.edit button.edit-save').click();
  await expect(stored.nth(1).locator('.fork-count')).toHaveText('2 of 2');
  await expect(stored).toHaveCount(2);
  await expect(stored.nth(0)).toContainText('I live in Oslo.');
  await expect(stored.nth(0).locator('.fork')).toHaveCount(0);
  await expect(stored.nth(1)).toContainText('I work as a carpenter.');
  await expect(page.locator('#turns li.live')).toContainText('not stored');
  await expect(page.locator('#branch')).toContainText('Branch 2 of 2 at message #1');
  await expect(page.locator('#branch')).toContainText('recall read #0–#0');
  await stored.nth(1).locator('.fork-prev').click();
  await expect(stored.nth(1).locator('.fork-count')).toHaveText('1 of 2');
  await expect(stored.nth(1)).toContainText('I work as a baker.');
});
