/**
 * pagewise/vite: a Vite plugin that serves and emits what the default embedder loads in the browser (the model and
 * the ONNX runtime's WASM) from your own origin, and the headers for cross-origin isolation.
 *
 * @module pagewise/vite
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import type { Plugin } from 'vite';
import { DEFAULT_MODEL, DEFAULT_MODEL_PACKAGE, MODELS_URL, ORT_WASM_FILES, ORT_WASM_URL } from './embed/model-defaults.js';

export { MODELS_URL, ORT_WASM_URL };

interface Asset { url: string; file: string }

/**
 * The headers that make a page cross-origin isolated (`self.crossOriginIsolated`), so that the ONNX runtime's WASM can
 * run the model on several threads (SharedArrayBuffer). Set them on `server.headers` and `preview.headers` (and on
 * your production server): every resource the page loads from another origin then needs CORS or a
 * Cross-Origin-Resource-Policy header.
 *
 * @example
 * // vite.config.ts
 * import { crossOriginIsolation, pagewiseAssets } from 'pagewise/vite';
 * export default defineConfig({ plugins: [pagewiseAssets()], worker: { format: 'es' },
 *   server: { headers: crossOriginIsolation }, preview: { headers: crossOriginIsolation } });
 */
export const crossOriginIsolation: Readonly<Record<string, string>> = Object.freeze({
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
});


const MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model_quantized.onnx'];

/** A package's folder, also when its "exports" map hides package.json: from the module it exports, walked up. */
function packageDir(from: string, pkg: string): string | null {
  const require = createRequire(join(from, 'package.json'));
  try { return dirname(require.resolve(`${pkg}/package.json`)); } catch { /* hidden by "exports" */ }
  let dir: string;
  try { dir = dirname(require.resolve(pkg)); } catch { return null; }
  while (!dir.endsWith(`${sep}${pkg.split('/').join(sep)}`)) {
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return dir;
}

function assets(root: string): Asset[] {
  const resolve = (pkg: string): string | null => packageDir(root, pkg);
  const out: Asset[] = [];
  const model = resolve(DEFAULT_MODEL_PACKAGE);
  // What transformers.js requests for it (special_tokens_map.json is in the package for other tools, never fetched).
  if (model) for (const file of MODEL_FILES) out.push({ url: `${MODELS_URL}${DEFAULT_MODEL}/${file}`, file: join(model, DEFAULT_MODEL, ...file.split('/')) });
  // onnxruntime-web is transformers.js' dependency: resolved from there.
  const hf = resolve('@huggingface/transformers');
  const ort = hf && packageDir(hf, 'onnxruntime-web');
  if (ort) for (const name of ORT_WASM_FILES) out.push({ url: ORT_WASM_URL + name, file: join(ort, 'dist', name) });
  return out;
}

function contentType(url: string): string {
  if (url.endsWith('.json')) return 'application/json';
  if (url.endsWith('.wasm')) return 'application/wasm';
  if (url.endsWith('.mjs')) return 'text/javascript';
  return 'application/octet-stream';
}

/**
 * Serves (dev, preview) and emits (build) what the default embedder loads in the browser, from your own origin: the
 * shipped all-MiniLM-L6-v2 under `/pagewise/models/all-MiniLM-L6-v2/` and the ONNX runtime's WASM under
 * `/pagewise/ort/`. Nothing is fetched from a CDN or a model hub.
 *
 * @example
 * // vite.config.ts
 * import { pagewiseAssets } from 'pagewise/vite';
 * export default defineConfig({ plugins: [pagewiseAssets()], worker: { format: 'es' } });
 */
/**
 * onnxruntime-web names its WASM with `new URL('ort-wasm….wasm', import.meta.url)`, which makes Vite emit a second,
 * hashed 27 MB copy that nothing loads (pagewise points the runtime at /pagewise/ort/): that default points there too.
 * Workers are bundled with `worker.plugins`, so pagewiseAssets() adds this one there.
 */
function ortWasmUrl(): Plugin {
  return {
    name: 'pagewise-ort-wasm-url',
    enforce: 'pre',
    transform(code, id) {
      if (!id.includes('onnxruntime-web') || !code.includes('import.meta.url')) return null;
      const out = code.replace(/new URL\((["'`])(ort-wasm[\w.-]*\.wasm)\1,\s*import\.meta\.url\)/g, (_m, _q, file: string) => `new URL(${JSON.stringify(ORT_WASM_URL + file)}, self.location.href)`);
      return out === code ? null : { code: out, map: null };
    },
  };
}

export function pagewiseAssets(): Plugin {
  let root = process.cwd();
  let list: Asset[] = [];
  type Headers = Record<string, string | number | readonly string[]> | undefined;
  // The server's own headers go on these files too (COEP on the runtime's JS glue, which starts the WASM threads).
  const serve = (headers: () => Headers) => (req: { url?: string }, res: { setHeader(k: string, v: string | number | readonly string[]): void; end(b: Buffer): void }, next: () => void) => {
    const path = (req.url ?? '').split('?')[0];
    const hit = list.find((a) => a.url === path);
    if (!hit) return next();
    for (const [k, v] of Object.entries(headers() ?? {})) res.setHeader(k, v);
    res.setHeader('Content-Type', contentType(hit.url));
    res.end(readFileSync(hit.file));
  };
  return {
    name: 'pagewise-assets',
    config(user) {
      const theirs = user.worker?.plugins;
      return { worker: { plugins: () => [...(theirs ? theirs() : []), ortWasmUrl()] } };
    },
    configResolved(config) { root = config.root; list = assets(root); },
    configureServer(server) { server.middlewares.use(serve(() => server.config.server.headers as Headers)); },
    configurePreviewServer(server) { list = assets(root); server.middlewares.use(serve(() => server.config.preview.headers as Headers)); },
    // onnxruntime-web names its WASM with `new URL('ort-wasm….wasm', import.meta.url)`, which makes Vite emit a second,
    // hashed 27 MB copy that nothing loads (pagewise points the runtime at /pagewise/ort/). Point that default there too.
    generateBundle() {
      for (const a of list) this.emitFile({ type: 'asset', fileName: a.url.slice(1), source: readFileSync(a.file) });
    },
  };
}
