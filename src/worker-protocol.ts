import type { Memory } from './engine.js';
import type { EmbeddingProgress, LlmOptions, MemoryOptions, ModelProgress, RemoteEmbeddingOptions, TransformersOptions } from './types.js';

/** Where the worker keeps the database. */
export interface WorkerStorageOptions {
  /** `opfs-sahpool` (default; persists) or `memory` (gone when the worker ends). */
  vfs?: 'opfs-sahpool' | 'memory';
  /** OPFS directory of the pool. Default `.pagewise`; one tab at a time may hold a directory. */
  directory?: string;
  /** Database name inside the pool. Default `pagewise.sqlite3`. */
  filename?: string;
}

/** Options that cross into the worker: plain data only (no functions, no driver objects). */
export interface WorkerMemoryOptions extends Omit<MemoryOptions, 'storage' | 'tokenizer' | 'llm' | 'tagger' | 'summarizer' | 'embedder' | 'onEmbeddingProgress' | 'onModelProgress'> {
  tokenizer?: 'gpt-tokenizer' | 'js-tiktoken';
  /** The LLM endpoint as data; the worker makes the client. */
  llm?: LlmOptions;
  tagger?: 'keyword' | 'llm';
  summarizer?: 'extractive' | 'llm';
  storage?: WorkerStorageOptions;
  /** The embedder as data; the worker loads it. */
  embedder?: TransformersOptions | RemoteEmbeddingOptions | false;
}

/** Progress callbacks, passed to the worker as Comlink proxies. */
export interface WorkerCallbacks {
  onEmbeddingProgress?: (progress: EmbeddingProgress) => void;
  onModelProgress?: (progress: ModelProgress) => void;
}

/** What the worker exposes over Comlink: `open` once, then the Memory methods. */
export interface WorkerApi extends Memory {
  /** Callbacks are separate arguments: Comlink proxies only top-level arguments. */
  open(options: WorkerMemoryOptions, onEmbeddingProgress?: WorkerCallbacks['onEmbeddingProgress'], onModelProgress?: WorkerCallbacks['onModelProgress']): Promise<void>;
}
