import { test as base, expect, type BrowserContext, type Page } from '@playwright/test';

type Outcome = { value?: unknown; error?: { name: string; code?: string; path?: string; message: string } };

/** Calls into the harness page (tests/browser/harness). */
export function harness(page: Page) {
  return {
    open: (options: object = {}) => page.evaluate((o) => (globalThis as any).harness.open(o), options) as Promise<Outcome>,
    call: (method: string, ...args: unknown[]) => page.evaluate(([m, a]) => (globalThis as any).harness.call(m, ...(a as unknown[])), [method, args] as const) as Promise<Outcome>,
    progress: () => page.evaluate(() => (globalThis as any).harness.progress()) as Promise<Array<Record<string, unknown>>>,
    storage: () => page.evaluate(() => (globalThis as any).harness.storage()) as Promise<Record<string, unknown> | undefined>,
    fallbacks: () => page.evaluate(() => (globalThis as any).harness.fallbacks()) as Promise<Array<Record<string, unknown>>>,
    close: () => page.evaluate(() => (globalThis as any).harness.close()) as Promise<Outcome>,
    wipe: (dirs: string[]) => page.evaluate((d) => (globalThis as any).harness.wipe(d), dirs),
    opfsHolds: (directory: string, word: string) => page.evaluate(([d, w]) => (globalThis as any).harness.opfsHolds(d, w), [directory, word] as const) as Promise<{ found: boolean; bytes: number }>,
    opfsScan: (directory: string, words: string[], runs: string[] = []) => page.evaluate(([d, w, r]) => (globalThis as any).harness.opfsScan(d, w, r), [directory, words, runs] as const) as Promise<{ name: string; size: number; sha256: string; words: string[]; runs: number }[]>,
    vectorsOf: (directory: string, keyHex: string) => page.evaluate(([d, k]) => (globalThis as any).harness.vectorsOf(d, k), [directory, keyHex] as const) as Promise<{ vectors?: string[]; error?: string }>,
    rekeyCryptoKey: () => page.evaluate(() => (globalThis as any).harness.rekeyCryptoKey()) as Promise<Outcome>,
    opfsEntries: () => page.evaluate(() => (globalThis as any).harness.opfsEntries()) as Promise<string[]>,
    conformance: () => page.evaluate(() => (globalThis as any).harness.conformance()) as Promise<{ driver: string; results: { name: string; ok: boolean; error?: string }[] }>,
  };
}

/**
 * Every test runs with requests outside the preview server blocked and recorded: pagewise must never reach a CDN
 * or a model hub. Requests from workers go through the context, so they are caught too.
 */
export const test = base.extend<{ external: string[] }>({
  external: async ({ context, baseURL }, use) => {
    const external = await blockExternal(context, baseURL!);
    await use(external);
    expect(external, 'requests outside the local server').toEqual([]);
  },
});

/**
 * Blocks and records every request of `context` outside `baseURL`, except those starting with one of `allowed` (a
 * local server of the test's; the list may grow while the test runs). The fixture above does this for `context`; a
 * test that opens its own contexts (browser.newContext()) calls it for each.
 */
export async function blockExternal(context: BrowserContext, baseURL: string, allowed: string[] = []): Promise<string[]> {
  const external: string[] = [];
  await context.route((url) => !url.href.startsWith(baseURL), (route) => {
    const url = route.request().url();
    if (allowed.some((a) => url.startsWith(a))) return route.fallback();
    external.push(url);
    return route.abort();
  });
  return external;
}

export async function openHarness(page: Page): Promise<void> {
  await page.goto('/tests/browser/harness/');
  await expect(page.locator('body[data-ready="true"]')).toBeAttached();
}

export { expect };
