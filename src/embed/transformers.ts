import { type Remote, proxy, wrap } from 'comlink';
import { PagewiseError } from '../contracts/errors.js';
import type { Embedder, ModelProgress, TransformersOptions } from '../contracts/types-embed.js';
import { DEFAULT_MODEL, DEFAULT_MODEL_PACKAGE } from './model-defaults.js';
import type { ModelConfig, createModelHost } from './model-host.js';

export { DEFAULT_MODEL, DEFAULT_MODEL_PACKAGE, MODELS_URL, ORT_WASM_URL } from './model-defaults.js';

const MODULE = 'embedder';

type Host = ReturnType<typeof createModelHost>;

interface Connection {
  host: Host | Remote<Host>;
  /** Where the model runs: 'thread' (Node worker thread), 'worker' (browser), 'inline'. */
  where: 'thread' | 'worker' | 'inline';
  /** Keeps Node alive only while a call is in flight (an idle model thread must not hold the process open). */
  hold<T>(p: Promise<T>): Promise<T>;
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof (globalThis as { window?: unknown }).window === 'undefined'
  && typeof (globalThis as { importScripts?: unknown }).importScripts === 'undefined';

/** Imports a Node built-in without letting a browser bundler see it. */
function nodeImport<T>(name: string): Promise<T> {
  return import(/* @vite-ignore */ name) as Promise<T>;
}

// In-process only where no thread can be started: imported by a name bundlers do not follow, so that a browser build
// carries the model code (transformers.js, 0.6 MB) once, in the model worker's chunk.
const MODEL_HOST = './model-host.js';
// Node's thread entry, by a name bundlers do not follow either (a browser build must not carry it).
const MODEL_THREAD = './model-thread.js';

/** The runtime every transformers.js model needs (an optional peer dependency of pagewise). */
const TRANSFORMERS_PACKAGE = '@huggingface/transformers';

/**
 * Node: the optional packages this embedder needs that cannot be found from here (`npm install pagewise` alone
 * brings neither: an app that never embeds in Node does not carry the ONNX runtimes, 450 MB). Nothing is imported:
 * resolving finds a package without loading it. The browser's bundler resolves them at build time instead.
 */
async function missingPackages(shipped: boolean): Promise<string[]> {
  if (!isNode) return [];
  const { createRequire } = await nodeImport<typeof import('node:module')>('node:module');
  const require = createRequire(import.meta.url);
  return [TRANSFORMERS_PACKAGE, ...(shipped ? [DEFAULT_MODEL_PACKAGE] : [])].filter((name) => {
    try {
      require.resolve(name === DEFAULT_MODEL_PACKAGE ? `${name}/package.json` : name);
      return false;
    } catch (e) {
      // Found, but its "exports" map hides the path asked for: installed.
      return (e as { code?: string }).code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED';
    }
  });
}

/** The error a missing optional package gives: their names in `missingPackages`, the command in the message. */
function missingError(missing: string[], model: string, shipped: boolean): PagewiseError {
  const who = shipped ? `the default embedder (${DEFAULT_MODEL}, offline)` : `the transformers.js embedder ("${model}")`;
  const error = new PagewiseError('EMBEDDING_ERROR', MODULE, `${who} needs ${missing.join(' and ')}, not installed here: `
    + `npm install ${missing.join(' ')} (optional packages of pagewise; to keep onnxruntime-node from downloading CUDA files at `
    + 'install, set "allowScripts": { "onnxruntime-node": false } in your package.json, or ONNXRUNTIME_NODE_INSTALL=skip). Until then retrieval uses tags + BM25; `embedder: false` turns embedding off.');
  return Object.assign(error, { missingPackages: missing });
}

/** Node: the model in a worker thread of its own. */
async function nodeThread(): Promise<Connection> {
  const { Worker } = await nodeImport<typeof import('node:worker_threads')>('node:worker_threads');
  const nodeEndpoint = (await nodeImport<typeof import('comlink/dist/esm/node-adapter.mjs')>('comlink/dist/esm/node-adapter.mjs')).default;
  // Not the parent's flags: `--input-type` (node -e) or `--eval` make a worker thread refuse to start.
  const execArgv = process.execArgv.filter((a) => !/^--(input-type|eval|print)\b|^-[ep]$/.test(a));
  const worker = new Worker(new URL(MODEL_THREAD, import.meta.url), { execArgv });
  worker.unref();
  // A thread that dies (fails to start, runs out of memory) rejects what waits on it; an 'error' event with no
  // listener would end the whole process.
  const dead = new Promise<never>((_, reject) => {
    worker.once('error', (e: Error) => reject(new Error(`the model thread failed: ${e.message}`)));
    worker.once('exit', (code: number) => reject(new Error(`the model thread exited (code ${code})`)));
  });
  dead.catch(() => undefined);
  let inFlight = 0;
  return {
    host: wrap<Host>(nodeEndpoint(worker as never)),
    where: 'thread',
    async hold(p) {
      if (inFlight++ === 0) worker.ref();
      try {
        return await Promise.race([p, dead]);
      } finally {
        if (--inFlight === 0) worker.unref();
      }
    },
  };
}

async function connect(inThread: boolean): Promise<Connections> {
  if (!inThread) {
    const { createModelHost: create } = await (import(/* @vite-ignore */ MODEL_HOST) as Promise<{ createModelHost: typeof createModelHost }>);
    return { background: { host: create(), where: 'inline', hold: (p) => p } };
  }
  // Node: questions have a thread of their own. A model run cannot be interrupted, so in one thread a question waits
  // for the background run in flight (chat replay: question p50 15 → 33 ms with the queue live); two threads cost a
  // second copy of the model in memory.
  if (isNode) {
    const [background, questions] = await Promise.all([nodeThread(), nodeThread()]);
    return { background, questions };
  }
  if (typeof Worker === 'undefined') return connect(false);
  // The pattern bundlers (Vite, webpack 5) recognize: the model worker becomes its own chunk.
  const worker = new Worker(new URL('./model-worker.js', import.meta.url), { type: 'module', name: 'pagewise-model' });
  const dead = new Promise<never>((_, reject) => {
    worker.addEventListener('error', (e) => reject(new Error(`the model worker failed: ${(e as ErrorEvent).message ?? 'it did not start'}`)), { once: true });
  });
  dead.catch(() => undefined);
  return { background: { host: wrap<Host>(worker), where: 'worker', hold: (p) => Promise.race([p, dead]) } };
}

/** Where the model runs: one connection, or (Node) a second one for questions only. */
interface Connections {
  background: Connection;
  questions?: Connection;
}

// One model per process (or engine worker) and settings: engines share it (a load costs ~0.5 s and ~100 MB).
const connections = new Map<string, Promise<Connections>>();

/**
 * A transformers.js encoder (default: the shipped all-MiniLM-L6-v2, 8-bit). The model runs in its own thread — a
 * Node worker thread, or a Web Worker beside the engine's — so background embedding never blocks a request; the
 * question's own vector goes ahead of queued background texts. `thread: false` runs it in-process.
 */
export function transformersEmbedder(options: TransformersOptions, onProgress?: (p: ModelProgress) => void): Embedder {
  const model = options.model ?? DEFAULT_MODEL;
  const dtype = options.dtype ?? (model === DEFAULT_MODEL && !options.localModelPath ? 'q8' : undefined);
  const modelId = `transformers:${model}${dtype ? `@${dtype}` : ''}${options.pooling === 'cls' ? '#cls' : ''}`;
  const config: ModelConfig = {
    model,
    ...(options.localModelPath ? { localModelPath: options.localModelPath } : {}),
    ...(options.allowRemoteModels ? { allowRemoteModels: true } : {}),
    ...(options.remoteHost ? { remoteHost: options.remoteHost } : {}),
    ...(dtype ? { dtype } : {}),
    ...(options.device ? { device: options.device } : {}),
    ...(options.wasmPaths ? { wasmPaths: options.wasmPaths } : {}),
    ...(options.pooling ? { pooling: options.pooling } : {}),
    ...(options.threads ? { threads: options.threads } : {}),
  };
  const key = JSON.stringify([config, options.thread ?? true]);
  let dimensions = options.dimensions ?? 0;
  let ready: Promise<Connections> | undefined;

  const load = (): Promise<Connections> => (ready ??= (async () => {
    const shipped = model === DEFAULT_MODEL && !options.localModelPath;
    const missing = await missingPackages(shipped);
    if (missing.length > 0) {
      ready = undefined;
      throw missingError(missing, model, shipped);
    }
    let c = connections.get(key);
    if (!c) {
      c = connect(options.thread ?? true);
      connections.set(key, c);
      c.catch(() => connections.delete(key));
    }
    const conn = await c;
    try {
      // 'ready' is said below, once per engine (an engine sharing a loaded model hears no progress).
      const report = (p: { status: 'loading' | 'ready'; progress?: number; file?: string }) => { if (p.status === 'loading') onProgress?.({ modelId, ...p }); };
      const bg = conn.background;
      const [info] = await Promise.all([
        // In Node no progress crosses to the thread: a Comlink proxy's port stays referenced and would keep the process
        // alive after close (the model is read from disk there; progress is the browser's download).
        bg.hold(bg.host.load(config, bg.where === 'inline' ? report : bg.where === 'worker' ? proxy(report) : undefined)),
        conn.questions?.hold(conn.questions.host.load(config)),
      ]);
      if (dimensions === 0) dimensions = info.dimensions;
      onProgress?.({ modelId, status: 'ready', progress: 1, device: info.device });
      return conn;
    } catch (cause) {
      ready = undefined;
      throw new PagewiseError('EMBEDDING_ERROR', MODULE, (cause as Error)?.message ?? String(cause), { cause });
    }
  })());

  async function run(texts: string[], query: boolean, signal?: AbortSignal): Promise<Float32Array[]> {
    const conns = await load();
    if (signal?.aborted) throw signal.reason;
    if (texts.length === 0) return [];
    const conn = (query ? conns.questions : undefined) ?? conns.background;
    let out: { data: Float32Array; dims: number };
    try {
      out = await conn.hold(conn.host.embed(texts, query));
    } catch (cause) {
      throw new PagewiseError('EMBEDDING_ERROR', MODULE, `embedding failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    }
    if (signal?.aborted) throw signal.reason;
    const d = out.dims;
    if (dimensions === 0) dimensions = d;
    return texts.map((_, i) => out.data.slice(i * d, (i + 1) * d));
  }

  return {
    modelId,
    get dimensions() { return dimensions; },
    local: true,
    maxBatchSize: options.maxBatchSize ?? 16,
    threshold: options.threshold ?? 0.3,
    async load() { await load(); },
    async embedQuery(text, signal) {
      return (await run([(options.queryPrefix ?? '') + text], true, signal))[0]!;
    },
    async embed(texts, signal) {
      return run(texts.map((t) => (options.passagePrefix ?? '') + t), false, signal);
    },
  };
}
