/// <reference types="vitest/config" />
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import { crossOriginIsolation, pagewiseAssets } from './src/vite.js';

// `/` has no page of its own: send people to the demo (dev server and preview alike).
const toDemo = (req: { url?: string }, res: { statusCode: number; setHeader(k: string, v: string): void; end(): void }, next: () => void) => {
  if (req.url !== '/' && req.url !== '/index.html') return next();
  res.statusCode = 302;
  res.setHeader('Location', '/demo/');
  res.end();
};
const demoAtRoot: Plugin = {
  name: 'pagewise-demo-at-root',
  configureServer(server) { server.middlewares.use(toDemo); },
  configurePreviewServer(server) { server.middlewares.use(toDemo); },
};

/** The long suites (see `test.projects`): minutes each by design, so they run in npm run test:slow, not npm test. */
const LONG = [
  'tests/node/system/fault-crash.test.ts',
  'tests/node/system/fault-fuzz.test.ts',
  'tests/node/surfaces/fault-surfaces.test.ts',
  'tests/node/system/long-run-scaling.test.ts',
  'tests/node/system/long-run-store.test.ts',
  'tests/node/edge/edge-long.test.ts',
  'tests/node/edge/pages-edge-long.test.ts',
  'tests/node/engine/*-property*.test.ts',
  'tests/node/engine/sync-bulk.test.ts',
  'tests/node/engine/sync-kill.test.ts',
  'tests/node/tokens/tokenizer-linear.test.ts',
  'tests/node/surfaces/mcp-conformance.test.ts',
  'tests/node/surfaces/cli-encryption.test.ts',
  'tests/node/retention/retention-long.test.ts',
];

export default defineConfig({
  // A missing file must be a real 404, not index.html.
  appType: 'mpa',
  // The demo's favicon (served at /favicon.ico and /favicon.svg, copied into the build).
  publicDir: 'demo/public',
  plugins: [demoAtRoot, pagewiseAssets()],
  // sqlite-wasm finds its .wasm next to its own module: pre-bundling would move it.
  optimizeDeps: {
    exclude: ['@sqlite.org/sqlite-wasm'],
    // Found only inside the workers: named here so that the dev server does not reload the page once to add them.
    include: ['@huggingface/transformers', 'comlink', 'compromise/two', 'fastest-levenshtein', 'pluralize', 'stemmer'],
  },
  worker: { format: 'es' },
  // Cross-origin isolated, so that the ONNX runtime's WASM can run the model on several threads.
  server: { port: 5173, headers: crossOriginIsolation },
  preview: { port: 4179, strictPort: true, headers: crossOriginIsolation },
  build: {
    outDir: '.demo-dist',
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: {
      input: {
        demo: resolve(import.meta.dirname, 'demo/index.html'),
        harness: resolve(import.meta.dirname, 'tests/browser/harness/index.html'),
      },
    },
  },
  test: {
    // Two projects: `unit` is what npm test runs after every change (fault injection's breakout checks, the
    // regressions and determinism included); `long` holds the suites that take minutes by design — fuzzing, crash and
    // kill recovery, long conversations, model-checked sync and branch runs, linear-time proofs, the MCP conformance
    // suite — run by npm run test:slow (and test:all, and CI).
    projects: [
      { extends: true, test: { name: 'unit', include: ['tests/node/**/*.test.ts'], exclude: LONG } },
      { extends: true, test: { name: 'long', include: LONG } },
    ],
    environment: 'node',
    // Safety nets, not waits: a test waits on events and states, and these only end one that hangs. Generous because
    // the suite must pass on a busy machine (CPU-bound work, child processes and workerd there take several times longer).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine, where most of a test's time is
    // spent waiting on child processes, workerd and the model's thread. Two keep both cores busy.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
