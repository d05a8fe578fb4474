import type { LlmTransportOptions } from './seams.js';

/**
 * Seam: an embedding model. Loaded lazily (the first `embed` loads it); vectors are unit length or are normalized
 * by pagewise. A failure degrades retrieval to tags + BM25 with a note in the manifest; it never fails a request.
 */
export interface Embedder {
  /** Names the vector space: a different id re-embeds stored turns instead of mixing spaces. */
  readonly modelId: string;
  readonly dimensions: number;
  /** Texts per `embed` call in the background queue. */
  readonly maxBatchSize: number;
  /**
   * Cosine similarity at which a vector hit counts (unrelated pairs sit below it). Calibrated per model: 0.3 for
   * all-MiniLM-L6-v2 and the remote default; `similarityThreshold` overrides it.
   */
  readonly threshold?: number;
  /**
   * True only when the model runs on this device (the transformers.js embedder sets it). Any other embedder, yours
   * included unless it says so, is taken to send texts elsewhere: a private message's text is never given to it
   * (its turn has no vector and is found by tags and BM25; a private question is not embedded).
   */
  readonly local?: boolean;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** The question's vector, when a model embeds queries differently (e5's `query: ` prefix). Default: `embed`. */
  embedQuery?(text: string, signal?: AbortSignal): Promise<Float32Array>;
  /** Loads the model ahead of the first `embed` (optional). */
  load?(onProgress?: (progress: ModelProgress) => void): Promise<void>;
}

/** Model loading progress (transformers.js reports it). */
export interface ModelProgress {
  modelId: string;
  /** 'loading' with a fraction (0..1) when known, then 'ready'. */
  status: 'loading' | 'ready';
  /**
   * The share (0..1) of the bytes of the files requested so far that have arrived, reported at each 1% step and when a
   * file's first bytes come. It is not the whole model's share (no one knows the total size up front): a file
   * requested later adds its size, so the share can go down, and it reads 1 between files.
   */
  progress?: number;
  /** The file being fetched, when known. */
  file?: string;
  /** With 'ready': where the model runs ('webgpu', 'wasm', 'cpu'). */
  device?: string;
}

/** Background embedding progress for one conversation. */
export interface EmbeddingProgress {
  conversationId: string;
  modelId: string;
  /** Turns and summaries with a vector of this model. */
  embedded: number;
  /** Turns and summaries stored. */
  total: number;
}

/** `embeddingStatus(conversationId)`: progress, and why vectors are missing when they are. */
export interface EmbeddingStatus extends EmbeddingProgress {
  /** Why the embedder is off or what failed last (null when all is well). */
  lastError: string | null;
  /**
   * Node: the optional packages the embedder needs that are not installed (`npm install pagewise` brings neither
   * `@huggingface/transformers` nor `@pagewise/all-minilm-l6-v2`); install them for vectors. Absent when none is missing.
   */
  missingPackages?: string[];
}

/**
 * A transformers.js sentence encoder, the default: all-MiniLM-L6-v2 (8-bit, 384-d) shipped in the npm package
 * `@pagewise/all-minilm-l6-v2` — read from node_modules in Node, served from your origin by `pagewise/vite` in the
 * browser. Or any feature-extraction model (bge-small, gte-small, e5…) from a folder, your host or the hub. Runs on
 * WebGPU when the browser has an adapter, WASM otherwise, onnxruntime-node's CPU build in Node; in its own thread.
 */
export interface TransformersOptions {
  provider: 'transformers';
  /** Hub id (`Xenova/all-MiniLM-L6-v2`) or a folder name under `localModelPath`. Default: `all-MiniLM-L6-v2` (shipped). */
  model?: string;
  /** Where local models live (`<localModelPath>/<model>/onnx/model.onnx` + tokenizer files). */
  localModelPath?: string;
  /** Default false: nothing is fetched from the hub unless you allow it. */
  allowRemoteModels?: boolean;
  /** Hub mirror or your own host for remote models. */
  remoteHost?: string;
  /** 'fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4'… (transformers.js' defaults when absent). */
  dtype?: string;
  /** 'webgpu', 'wasm', 'cpu'; default: webgpu when `navigator.gpu` exists, else wasm (browser) / cpu (Node). */
  device?: string;
  /** ONNX runtime WASM files from your own origin (never a CDN): URL prefix or file map. Default `/pagewise/ort/` (pagewise/vite). */
  wasmPaths?: string | Record<string, string>;
  /**
   * The ONNX runtime's threads for one model run. Node: cores − 1, at most 4. Browser (WASM): onnxruntime-web's default,
   * half the cores (at most 4), and only on a cross-origin isolated page (COOP/COEP headers: `crossOriginIsolation`
   * from pagewise/vite); 1 elsewhere.
   */
  threads?: number;
  /** How token vectors become one: 'mean' (default; MiniLM, gte, e5) or 'cls' (bge). */
  pooling?: 'mean' | 'cls';
  /**
   * Run the model in its own thread (default true): in Node two worker threads (background texts, and questions so
   * that a question never waits for a background run; ~100 MB more memory), in the browser one Web Worker started by
   * the engine's worker. false runs it in-process (a batch then blocks the engine while it runs).
   */
  thread?: boolean;
  /** Prefix for queries/passages some models want (e5: 'query: '). */
  queryPrefix?: string;
  passagePrefix?: string;
  dimensions?: number;
  maxBatchSize?: number;
  threshold?: number;
}

/** An OpenAI-compatible `/v1/embeddings` endpoint over fetch: for the edge and for apps that embed on a server. */
export interface RemoteEmbeddingOptions extends LlmTransportOptions {
  provider: 'openai-compatible';
  /** E.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Sent as `dimensions` when set (models that can shorten their vectors). */
  dimensions?: number;
  maxBatchSize?: number;
  threshold?: number;
}

/** `embedder` option: a provider as plain data (crosses to a worker), your own Embedder, or false for none. */
export type EmbedderOptions = TransformersOptions | RemoteEmbeddingOptions | Embedder | false;
