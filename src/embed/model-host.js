// @ts-check
// The model side of the transformers.js embedder, in plain JavaScript so that a Node worker thread can start it
// without a build step: loads a tokenizer + ONNX model, embeds one small batch at a time, questions first.
// It runs in its own thread (model-thread.js in Node, model-worker.js in the browser), so a batch never blocks the
// engine; or in-process where no thread can be started (see transformers.ts).

import { DEFAULT_MODEL, DEFAULT_MODEL_PACKAGE, MODELS_URL, ORT_WASM_CPU, ORT_WASM_URL, ORT_WASM_WEBGPU } from './model-defaults.js';

/**
 * Texts per model run in the background: one. A text's vector must not depend on the texts run beside it: the 8-bit
 * model scales its activations per run and pads a run to its longest text, so a turn embedded beside another came
 * out up to 0.008 different per component from the same turn alone — and which turns share a run depends on when
 * the background queue got to them (what was pending then), so the same conversation stored different vectors from
 * one run to the next. Alone, a text always gets the same vector (also the one its question path would give), and
 * on one core a run of one is no slower per text (no padding). A question waits at most for one such run (it goes
 * first in the queue, but a run in flight is not interrupted).
 */
export const CHUNK_TEXTS = 1;

/**
 * @typedef {object} ModelConfig
 * @property {string} model Hub id or folder name under `localModelPath`.
 * @property {string} [localModelPath]
 * @property {boolean} [allowRemoteModels]
 * @property {string} [remoteHost]
 * @property {string} [dtype]
 * @property {string} [device]
 * @property {string | Record<string, string>} [wasmPaths]
 * @property {'mean' | 'cls'} [pooling]
 * @property {number} [threads] onnxruntime's intra-op threads. Node: its default is one per core, spinning while idle.
 *   Browser: onnxruntime-web's default is half the cores (at most 4) on a cross-origin isolated page, else 1.
 */

/**
 * @typedef {object} LoadedModel
 * @property {number} dimensions
 * @property {string} device
 * @property {(texts: string[]) => Promise<{ data: Float32Array, dims: number }>} run
 */

/** @typedef {{ status: 'loading' | 'ready', progress?: number, file?: string, device?: string }} LoadProgress */

const isNode = typeof process !== 'undefined' && !!process.versions?.node
  && typeof (/** @type {any} */ (globalThis).window) === 'undefined' && typeof (/** @type {any} */ (globalThis).importScripts) === 'undefined';

/**
 * Imports a Node built-in without letting a browser bundler see it.
 * @param {string} name
 * @returns {Promise<any>}
 */
function nodeImport(name) {
  return import(/* @vite-ignore */ name);
}

/** Node: the folder holding the shipped model's folder (node_modules/@pagewise/all-minilm-l6-v2/). */
async function shippedModelPath() {
  const { createRequire } = await nodeImport('node:module');
  const path = await nodeImport('node:path');
  return `${path.dirname(createRequire(import.meta.url).resolve(`${DEFAULT_MODEL_PACKAGE}/package.json`))}${path.sep}`;
}

/**
 * Loads tokenizer and model.
 * @param {ModelConfig} config
 * @param {(p: LoadProgress) => void} [onProgress]
 * @returns {Promise<LoadedModel>}
 */
export async function loadModel(config, onProgress) {
  /** @type {typeof import('@huggingface/transformers')} */
  let hf;
  try {
    hf = await import('@huggingface/transformers');
  } catch (cause) {
    throw new Error(`transformers.js could not be imported (${String(/** @type {Error} */ (cause)?.message ?? cause)}): npm i @huggingface/transformers@4.3.1 (with onnxruntime-node-install=skip in .npmrc when offline)`);
  }
  const { env } = hf;
  env.allowRemoteModels = config.allowRemoteModels ?? false;
  env.allowLocalModels = true;
  const shipped = config.model === DEFAULT_MODEL && !config.localModelPath;
  if (config.localModelPath) env.localModelPath = config.localModelPath;
  // In the browser a path on this origin: transformers.js joins it with '/' (a full URL's '//' would collapse).
  else if (shipped) env.localModelPath = isNode ? await shippedModelPath() : MODELS_URL;
  if (config.remoteHost) env.remoteHost = config.remoteHost;
  const devices = config.device ? [config.device] : isNode ? ['cpu'] : (await hasWebGpu()) ? ['webgpu', 'wasm'] : ['wasm'];
  const wasm = env.backends.onnx.wasm;
  if (!isNode && wasm) {
    // One runtime per worker, chosen before the first session. transformers.js imports onnxruntime-web's WebGPU
    // bundle, whose built-in JS glue is the asyncify build's (26.9 MB of WASM, for WebGPU and WASM alike). Without
    // WebGPU, the plain build (14.3 MB) does the same WASM work: its glue is imported from `mjs` (a WebGPU that fails
    // later falls back to WASM on the asyncify runtime already loaded).
    const at = (/** @type {string} */ file) => new URL(ORT_WASM_URL + file, globalThis.location?.href).href;
    wasm.wasmPaths = /** @type {any} */ (config.wasmPaths ?? (devices.includes('webgpu')
      ? { wasm: at(ORT_WASM_WEBGPU) }
      : { mjs: at(ORT_WASM_CPU.mjs), wasm: at(ORT_WASM_CPU.wasm) }));
    wasm.proxy = false;
    if (config.threads) wasm.numThreads = config.threads;
  }
  const dtype = config.dtype ?? (shipped ? 'q8' : undefined);
  if (!isNode && onProgress) env.fetch = /** @type {any} */ (progressFetch(/** @type {any} */ (env.fetch) ?? fetch, onProgress));
  /** @type {unknown} */
  let failure;
  for (const device of devices) {
    try {
      // No progress_callback: with one, transformers.js first GETs every file for its size (a second 23 MB download
      // for a local path in the browser). progressFetch reports the bytes of the one real download instead.
      const tokenizer = await hf.AutoTokenizer.from_pretrained(config.model);
      // In a thread beside the engine: a fixed number of threads that sleep when idle, so the model never spins on the
      // cores the engine needs.
      const session_options = isNode && config.threads
        ? { intraOpNumThreads: config.threads, interOpNumThreads: 1, extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } } }
        : undefined;
      const model = await hf.AutoModel.from_pretrained(config.model, {
        device: /** @type {any} */ (device), ...(dtype ? { dtype: /** @type {any} */ (dtype) } : {}),
        ...(session_options ? { session_options: /** @type {any} */ (session_options) } : {}),
      });
      const run = runner(tokenizer, model, config.pooling ?? 'mean');
      // One short run: the width as the model gives it (configs can be wrong), and the first run's setup paid now.
      const { dims } = await run(['a']);
      onProgress?.({ status: 'ready', progress: 1, device });
      return { device, dimensions: dims, run };
    } catch (cause) {
      // WebGPU can fail after the files were fetched (no adapter features, unsupported ops): WASM next, from the
      // HTTP cache where the server allows it.
      failure = cause;
    }
  }
  throw new Error(`transformers.js could not load "${config.model}" (${String(/** @type {Error} */ (failure)?.message ?? failure)}). `
    + 'Check localModelPath (<path>/<model>/onnx/model_quantized.onnx or model.onnx, and the tokenizer files) or allowRemoteModels.');
}

/**
 * fetch, reporting the bytes of each response as they arrive (what the page shows while the model and the runtime load).
 * @param {typeof fetch} base
 * @param {(p: LoadProgress) => void} onProgress
 * @returns {typeof fetch}
 */
function progressFetch(base, onProgress) {
  /** @type {Map<string, { loaded: number, total: number }>} */
  const files = new Map();
  let reported = -1;
  /** Files whose first bytes were reported. */
  const heard = new Set();
  const report = (/** @type {string} */ file) => {
    let loaded = 0;
    let total = 0;
    for (const f of files.values()) { loaded += f.loaded; total += f.total; }
    const progress = total > 0 ? loaded / total : 0;
    // Every 1% either way, and a file's first bytes: a file requested after smaller ones lowers the share (its size
    // joins the total), and its download must be heard, not wait until it passes the share reached before it.
    if (heard.has(file) && Math.abs(progress - reported) < 0.01 && progress < 1) return;
    reported = progress;
    heard.add(file);
    onProgress({ status: 'loading', progress, file });
  };
  return async (input, init) => {
    const response = await base(input, init);
    const total = Number(response.headers.get('content-length')) || 0;
    if (!response.ok || !response.body || total === 0) return response;
    const file = String(input instanceof Request ? input.url : input).split('/').slice(-2).join('/');
    const entry = { loaded: 0, total };
    files.set(file, entry);
    const counted = response.body.pipeThrough(new TransformStream({
      transform(chunk, controller) {
        entry.loaded += chunk.byteLength;
        report(file);
        controller.enqueue(chunk);
      },
    }));
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

async function hasWebGpu() {
  const gpu = /** @type {any} */ (globalThis).navigator?.gpu;
  if (!gpu) return false;
  try {
    return !!(await gpu.requestAdapter());
  } catch {
    return false;
  }
}

/**
 * Tokenize (truncated at the model's length), run, pool, normalize.
 * @param {any} tokenizer
 * @param {any} model
 * @param {'mean' | 'cls'} pooling
 * @returns {LoadedModel['run']}
 */
function runner(tokenizer, model, pooling) {
  // transformers.js drops the closing [SEP] when it truncates (4.3.1); sentence-transformers keeps it. Put it back
  // when the tokenizer ends short inputs with it.
  const sep = tokenizer.sep_token_id;
  const probe = tokenizer('a').input_ids;
  const closes = sep !== undefined && sep !== null && Number(probe.data[probe.data.length - 1]) === Number(sep);
  return async (texts) => {
    const enc = tokenizer(texts, { padding: true, truncation: true });
    const [batch, length] = enc.input_ids.dims;
    const ids = enc.input_ids.data;
    const mask = enc.attention_mask.data;
    if (closes) {
      for (let b = 0; b < batch; b++) {
        let last = -1;
        for (let l = 0; l < length; l++) if (mask[b * length + l]) last = l;
        if (last >= 0 && ids[b * length + last] !== BigInt(sep)) ids[b * length + last] = BigInt(sep);
      }
    }
    const out = await model(enc);
    const hidden = out.last_hidden_state ?? out.token_embeddings ?? Object.values(out)[0];
    const d = hidden.dims[2];
    // Typed as any: plain indexing in the hot loop (typed arrays read 0 past their end anyway).
    const h = /** @type {any} */ (hidden.data);
    const data = new Float32Array(batch * d);
    for (let b = 0; b < batch; b++) {
      const v = /** @type {any} */ (data.subarray(b * d, (b + 1) * d));
      if (pooling === 'cls') v.set(h.subarray(b * length * d, b * length * d + d));
      else {
        let n = 0;
        for (let l = 0; l < length; l++) {
          if (!mask[b * length + l]) continue;
          n++;
          const at = (b * length + l) * d;
          for (let k = 0; k < d; k++) v[k] += h[at + k];
        }
        for (let k = 0; k < d; k++) v[k] /= n || 1;
      }
      let norm = 0;
      for (let k = 0; k < d; k++) norm += v[k] * v[k];
      norm = Math.sqrt(norm) || 1;
      for (let k = 0; k < d; k++) v[k] /= norm;
    }
    hidden.dispose?.();
    return { data, dims: d };
  };
}

/** One event-loop turn in which incoming messages are delivered (Node: after its poll phase; browsers: a task). */
function yieldToMessages() {
  return new Promise((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)));
}

/**
 * The model behind a queue: questions go first; background texts run CHUNK_TEXTS at a time, so a
 * question waits for at most one chunk. Exposed to the engine over Comlink (or called directly in-process).
 */
export function createModelHost() {
  /** @type {Promise<LoadedModel> | undefined} */
  let loading;
  /** @type {{ texts: string[], query: boolean, resolve: (v: { data: Float32Array, dims: number }) => void, reject: (e: unknown) => void }[]} */
  const queue = [];
  let running = false;

  async function pump() {
    if (running) return;
    running = true;
    try {
      for (let job = queue.shift(); job; job = queue.shift()) {
        try {
          job.resolve(await (await /** @type {Promise<LoadedModel>} */ (loading)).run(job.texts));
        } catch (cause) {
          job.reject(cause);
        }
        // Let messages that arrived during the run (a question) be queued before the next job is chosen: a run
        // resolves through microtasks, which would otherwise start the next background chunk first.
        if (queue.length > 0) await yieldToMessages();
      }
    } finally {
      running = false;
    }
  }

  /**
   * @param {string[]} texts
   * @param {boolean} query
   * @returns {Promise<{ data: Float32Array, dims: number }>}
   */
  function enqueue(texts, query) {
    return new Promise((resolve, reject) => {
      const job = { texts, query, resolve, reject };
      if (query) {
        let at = 0;
        while (at < queue.length && queue[at]?.query) at++;
        queue.splice(at, 0, job);
      } else queue.push(job);
      void pump();
    });
  }

  return {
    /**
     * @param {ModelConfig} config
     * @param {(p: LoadProgress) => void} [onProgress]
     * @returns {Promise<{ dimensions: number, device: string }>}
     */
    async load(config, onProgress) {
      loading ??= loadModel(config, onProgress);
      loading.catch(() => { loading = undefined; });
      const m = await loading;
      return { dimensions: m.dimensions, device: m.device };
    },

    /**
     * Vectors of `texts`, unit length, as one array of texts × dims.
     * @param {string[]} texts
     * @param {boolean} query
     * @returns {Promise<{ data: Float32Array, dims: number }>}
     */
    async embed(texts, query) {
      if (!loading) throw new Error('the model is not loaded: call load() first');
      if (query || texts.length === 0) return enqueue(texts, true);
      const parts = [];
      for (let i = 0; i < texts.length; i += CHUNK_TEXTS) parts.push(enqueue(texts.slice(i, i + CHUNK_TEXTS), false));
      const done = await Promise.all(parts);
      const dims = done[0]?.dims ?? 0;
      const data = new Float32Array(texts.length * dims);
      let at = 0;
      for (const d of done) { data.set(d.data, at); at += d.data.length; }
      return { data, dims };
    },
  };
}
