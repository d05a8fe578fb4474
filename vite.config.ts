/// <reference types="vitest/config" />
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

export default defineConfig({
  // A missing file must be a real 404, not index.html.
  appType: 'mpa',
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
    include: ['tests/node/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
