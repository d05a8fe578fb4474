// Every browser code sample of README.md and docs/ (`<!-- sample: browser -->`; docs/contributing/samples.md), one test
// each named by its page and line. The sample's files are written under .samples/browser/<slug>/ (gitignored), with a
// page that imports its entry as a module (harness/sample.ts); Vite builds that folder as a user's app would be built
// (`?worker` and `?url` imports, pagewiseAssets() for the model, or the sample's own vite.config.ts) and serves it
// cross-origin isolated; the test waits until the entry's top-level await has settled, then fails on what the page
// threw or wrote to the console as an error, and checks the claims against the console's text. Samples import the
// built package: `npm run build` first (npm test does).
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test, expect, type Browser, type Page } from '@playwright/test';
import { build, preview, type InlineConfig, type PreviewServer } from 'vite';
import { crossOriginIsolation, pagewiseAssets } from '../../src/vite.js';
import { MODEL_REPLY, ROOT, SAFETY_NET_MS, checkClaims, extractSamples, fail, findSamples, modelEnv, tail, writeSample, type Sample } from '../support/samples.js';
import { startUpstream, type Upstream } from '../support/upstream.js';
import { blockExternal } from './fixtures.js';

const PAGE = '__sample__.html';
const { samples } = findSamples(ROOT);
let upstream: Upstream;

test.beforeAll(async () => {
  // What a browser sample reads to reach a model: Vite's env variables, import.meta.env.VITE_OPENAI_BASE_URL and so on.
  upstream = await startUpstream({ reply: MODEL_REPLY, cors: true });
  for (const [k, v] of Object.entries(modelEnv(upstream.base))) process.env[`VITE_${k}`] = v;
});
test.afterAll(() => upstream?.close());

// The Node suite (tests/node/docs/samples.test.ts) runs the others; this keeps the file from having no test at all.
test('finds the samples of README.md and docs/', () => {
  expect(samples.length, 'TypeScript or JavaScript blocks in README.md and docs/').toBeGreaterThan(0);
});

/** The page that runs the sample: its entry imported by harness/sample.ts, which marks the body when it settles. */
function harnessPage(sample: Sample, dir: string): string {
  const runner = relative(dir, join(ROOT, 'tests/browser/harness/sample.ts')).split('\\').join('/');
  return `<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${sample.id}</title></head>\n<body>\n`
    + `<script type="module">\nimport { runSample } from '${runner}';\nrunSample(() => import('./${sample.entry}'));\n</script>\n</body>\n</html>\n`;
}

/** Builds the sample's folder with Vite and serves the build, cross-origin isolated, on a free port of loopback. */
async function buildAndServe(sample: Sample, dir: string): Promise<PreviewServer> {
  if (!existsSync(join(ROOT, 'dist/src/client.js'))) fail(sample, 'needs the built package: npm run build');
  writeFileSync(join(dir, PAGE), harnessPage(sample, dir));
  const own = sample.files.find((f) => /^vite\.config\.(m?[jt]s)$/.test(f.name));
  const outDir = join(dir, '.dist');
  const config: InlineConfig = {
    root: dir, logLevel: 'error',
    // The sample's own vite.config.ts when it has one, else what the guides tell a user to write.
    ...(own ? { configFile: join(dir, own.name) } : { configFile: false, plugins: [pagewiseAssets()], worker: { format: 'es' as const } }),
    build: { outDir, emptyOutDir: true, target: 'es2022', rollupOptions: { input: join(dir, PAGE) } },
  };
  try {
    await build(config);
  } catch (e) {
    fail(sample, `does not build:\n${tail((e as Error).message)}`);
  }
  return preview({
    root: dir, configFile: false, logLevel: 'error', build: { outDir },
    preview: { host: '127.0.0.1', port: 0, strictPort: false, headers: { ...crossOriginIsolation } },
  });
}

/** What goes wrong where the page's own record (harness/sample.ts) cannot see: in its workers, or the page itself. */
function watch(page: Page): string[] {
  const errors: string[] = [];
  page.on('worker', (w) => w.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`worker ${w.url()}: console.error: ${msg.text()}`);
  }));
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.stack ?? e.message}`));
  page.on('crash', () => errors.push('the page crashed'));
  return errors;
}

async function runBrowserSample(sample: Sample, page: Page, origin: string): Promise<string> {
  const errors = watch(page);
  const external = await blockExternal(page.context(), origin, [upstream.base]);
  await page.goto(`${origin}/${PAGE}`);
  const body = page.locator('body[data-sample]');
  await body.waitFor({ state: 'attached', timeout: SAFETY_NET_MS });
  const record = await page.evaluate(() => (globalThis as unknown as { sampleConsole: { lines: string[]; errors: string[] } }).sampleConsole);
  const output = record.lines.join('\n');
  const shown = `\n--- console ---\n${tail(output) || '(nothing)'}`;
  if (await body.getAttribute('data-sample') === 'failed') fail(sample, `threw:\n${await body.getAttribute('data-error')}${shown}`);
  const all = [...new Set([...record.errors, ...errors])];
  if (all.length) fail(sample, `ran with errors:\n${all.join('\n')}${shown}`);
  if (external.length) fail(sample, `asked for what is outside the local servers:\n${external.join('\n')}`);
  return output;
}

/** Writes, builds, serves and runs one sample, then checks its claims; throws a SampleFailure naming it. */
async function runOne(sample: Sample, browser: Browser): Promise<string> {
  if (sample.problems.length) fail(sample, `cannot run as written:\n${sample.problems.join('\n')}`);
  const dir = writeSample(sample);
  const server = await buildAndServe(sample, dir);
  // A context of its own: its own OPFS, and requests allowed to this sample's server only.
  const context = await browser.newContext();
  try {
    const output = await runBrowserSample(sample, await context.newPage(), server.resolvedUrls!.local[0]!.replace(/\/$/, ''));
    checkClaims(sample, output);
    rmSync(dir, { recursive: true, force: true });
    return output;
  } finally {
    await context.close();
    await server.close();
    // The build holds the model and the runtime's WASM (about 60 MB): only the sample's own files are kept.
    rmSync(join(dir, '.dist'), { recursive: true, force: true });
  }
}

// A safety net only: the build, the model's first load and the sample itself on a busy machine.
const TIMEOUT = SAFETY_NET_MS + 180_000;

for (const sample of samples.filter((s) => s.runtime === 'browser')) {
  test(sample.id, async ({ browser }) => {
    test.setTimeout(TIMEOUT);
    await runOne(sample, browser);
  });
}

test.describe('the browser sample harness', () => {
  const inline = (code: string) => {
    const { samples: [sample] } = extractSamples(`<!-- sample: browser -->\n\`\`\`ts\n${code}\n\`\`\`\n`, 'docs/harness.md');
    return sample!;
  };
  const failure = (sample: Sample, browser: Browser) => runOne(sample, browser).then(() => 'passed', (e: Error) => e.message);
  // A failed sample's folder is kept for a look: these failed on purpose.
  test.afterAll(() => rmSync(join(ROOT, '.samples', 'browser', 'docs-harness-md-2'), { recursive: true, force: true }));

  test('runs a sample that awaits, streams from the model double and logs its claims', async ({ browser }) => {
    test.setTimeout(TIMEOUT);
    const out = await runOne(inline([
      'const res = await fetch(`${import.meta.env.VITE_OPENAI_BASE_URL}/chat/completions`, { method: "POST",',
      '  body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [] }) });',
      'const text = (await res.text()).split("\\n").filter((l) => l.startsWith("data: {"))',
      '  .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? "").join("");',
      'console.log("reply:", text, crossOriginIsolated); // → reply: (model reply) true',
    ].join('\n')), browser);
    expect(out).toBe('reply: (model reply) true');
  });

  test('fails a sample that throws, logs an error, rejects unhandled, or lacks a claim', async ({ browser }) => {
    test.setTimeout(TIMEOUT);
    expect(await failure(inline('console.log("before");\nthrow new Error("the sample broke");'), browser))
      .toMatch(/^docs\/harness\.md:2 \(browser sample\) threw:\nError: the sample broke[\s\S]*--- console ---\nbefore$/);
    expect(await failure(inline('console.error("something is wrong");'), browser))
      .toMatch(/^docs\/harness\.md:2 \(browser sample\) ran with errors:\nconsole\.error: something is wrong/);
    expect(await failure(inline('void Promise.reject(new Error("nobody waits"));\nawait new Promise((ok) => setTimeout(ok, 0));'), browser))
      .toMatch(/ran with errors:[\s\S]*nobody waits/);
    expect(await failure(inline('console.log("4"); // → 5'), browser))
      .toBe('docs/harness.md:2 (browser sample) printed what it does not claim:\ndocs/harness.md:3: claims "5", not in the output\n--- output ---\n4');
  });
});
