import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';

// Waits are on the page's state; their timeouts are safety nets for a busy machine (the figures printed are the times).
const MODEL_LOAD = { timeout: 240_000 };

/**
 * The demo's first load, cold (a fresh context: empty HTTP cache, Cache Storage and OPFS): the bytes the browser
 * transfers — the page's and every worker's (the engine's worker, the model worker inside it and the ONNX runtime's
 * threads), the model and the runtime included — and how long until the embedding model is ready. Then the same page
 * reloaded (warm cache). Bytes have a ceiling that catches a regression (a second runtime, a float32 model); times are
 * printed, never asserted (they depend on the machine).
 */
const CEILING = 45e6;

/** performance.now() when the page first says data-ready (engine worker up) and data-model="ready" (model loaded). */
async function timings(page: Page): Promise<{ worker: number; model: number }> {
  await expect(page.locator('body[data-model="ready"]')).toBeAttached(MODEL_LOAD);
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
  return page.evaluate(() => (globalThis as any).__firstLoad as { worker: number; model: number });
}

test('demo first load: bytes transferred (page and workers) under a ceiling, time until the model is ready', async ({ page, external: _ }) => {
  test.setTimeout(600_000);
  await page.context().addInitScript(() => {
    if (typeof document === 'undefined') return;
    const seen = ((globalThis as any).__firstLoad = {} as Record<string, number>);
    new MutationObserver(() => {
      const b = document.body;
      if (!b) return;
      if (b.dataset.ready === 'true') seen.worker ??= performance.now();
      if (b.dataset.model === 'ready') seen.model ??= performance.now();
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-ready', 'data-model'] });
  });
  // Every response the context sees (Playwright follows dedicated workers, nested ones too): body + headers as sent.
  const pending: Promise<void>[] = [];
  const files: { path: string; bytes: number }[] = [];
  page.context().on('requestfinished', (r) => {
    pending.push(r.sizes().then((s) => { files.push({ path: new URL(r.url()).pathname, bytes: s.responseBodySize + s.responseHeadersSize }); }, () => undefined));
  });
  const wipe = () => page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('.pagewise-demo', { recursive: true }).catch(() => undefined);
  });

  await page.goto('/demo/');
  const cold = await timings(page);
  await Promise.all(pending);
  const bytes = files.reduce((a, f) => a + f.bytes, 0);
  const largest = [...files].sort((a, b) => b.bytes - a.bytes).slice(0, 6).map((f) => `${f.path} ${(f.bytes / 1e6).toFixed(1)} MB`);
  const requests = files.length;
  const isolated = await page.evaluate(() => crossOriginIsolated);

  files.length = 0;
  pending.length = 0;
  await wipe();
  await page.reload();
  const warm = await timings(page);
  await Promise.all(pending);
  const warmBytes = files.reduce((a, f) => a + f.bytes, 0);

  const figure = `demo first load (cold): ${(bytes / 1e6).toFixed(1)} MB in ${requests} requests; `
    + `worker ready ${(cold.worker / 1000).toFixed(1)} s, model ready ${(cold.model / 1000).toFixed(1)} s; `
    + `reload (warm cache): ${(warmBytes / 1e6).toFixed(1)} MB in ${files.length} requests, worker ready ${(warm.worker / 1000).toFixed(1)} s, model ready ${(warm.model / 1000).toFixed(1)} s; `
    + `cross-origin isolated: ${isolated}; largest: ${largest.join(', ')}`;
  test.info().annotations.push({ type: 'figure', description: figure });
  console.log(figure);

  // The files that matter were counted (the model worker's requests among them): the model and one ONNX runtime.
  expect(largest.some((f) => f.startsWith('/pagewise/models/all-MiniLM-L6-v2/onnx/model_quantized.onnx'))).toBe(true);
  expect(largest.some((f) => f.startsWith('/pagewise/ort/') && f.includes('.wasm'))).toBe(true);
  expect(isolated).toBe(true);
  expect(bytes).toBeLessThanOrEqual(CEILING);
});
