import type { Memory } from '../contracts/memory.js';
import type { EmbeddingProgress, EncryptionOptions, LlmOptions, MemoryOptions, ModelProgress, RankingWeights, RemoteEmbeddingOptions, SearchOptions, SearchProviderOptions, TransformersOptions } from '../contracts/types.js';

/** Where the worker keeps the database. */
export interface WorkerStorageOptions {
  /** `opfs-sahpool` (default; persists) or `memory` (gone when the worker ends). */
  vfs?: 'opfs-sahpool' | 'memory';
  /** OPFS directory of the pool. Default `.pagewise`; one tab at a time may hold a directory. */
  directory?: string;
  /** Database name inside the pool. Default `pagewise.sqlite3`. */
  filename?: string;
}

/**
 * Where a worker's memory lives, as `connect()` reports it (`memory.storage`), and what `onStorageFallback` is given.
 */
export interface StorageStatus {
  /** `opfs-sahpool`: a database file in the origin's OPFS. `memory`: in the worker's memory. `custom`: `serveMemory({ storage })`'s own. */
  vfs: 'opfs-sahpool' | 'memory' | 'custom';
  /** `false`: nothing survives a reload, a closed tab or `close()`. `null`: a custom storage, which pagewise cannot tell. */
  persistent: boolean | null;
  /**
   * Set when OPFS was asked for and could not open, and `fallback: 'memory'` ran the memory in memory instead: why
   * OPFS failed (the `STORAGE_UNAVAILABLE` error's message). `null` otherwise.
   */
  fallbackReason: string | null;
}

/** Options that cross into the worker: plain data only (no functions, no driver objects). */
export interface WorkerMemoryOptions extends Omit<MemoryOptions, 'storage' | 'tokenizer' | 'llm' | 'tagger' | 'summarizer' | 'embedder' | 'onEmbeddingProgress' | 'onModelProgress' | 'ranking' | 'search'> {
  /** Retrained ranking weights (plain data; candidates are not traced across the worker boundary). */
  ranking?: { weights?: RankingWeights };
  /**
   * What to do when OPFS cannot open (a private window, an old browser, storage blocked for the site): `'none'`
   * (default) fails with `STORAGE_UNAVAILABLE`; `'memory'` runs in memory for the session instead, and says so:
   * `memory.storage.persistent` is `false` and `onStorageFallback` is called. Other errors (a locked or full
   * database, bad options) are never turned into a fallback.
   */
  fallback?: 'none' | 'memory';
  tokenizer?: 'gpt-tokenizer' | 'js-tiktoken';
  /** The LLM endpoint as data; the worker makes the client. */
  llm?: LlmOptions;
  tagger?: 'keyword' | 'llm';
  summarizer?: 'extractive' | 'llm';
  storage?: WorkerStorageOptions;
  /**
   * Encrypt the OPFS database at rest (and the in-memory fallback's exports): `{ key }` — 32 bytes, or an AES-GCM
   * `CryptoKey`, which may be non-extractable — or `{ passphrase }`. Sent to the worker once, with `open`.
   */
  encryption?: EncryptionOptions;
  /** The embedder as data; the worker loads it. */
  embedder?: TransformersOptions | RemoteEmbeddingOptions | false;
  /**
   * External search, its providers as data (`searxng()`, `braveSearch()`, `tavily()`): the worker searches with its
   * own `fetch`. A key given here is in the page: prefer a SearXNG instance without one, or search server-side.
   */
  search?: Omit<SearchOptions, 'providers'> & { providers: SearchProviderOptions[] };
}

/** Progress callbacks, passed to the worker as Comlink proxies. */
export interface WorkerCallbacks {
  onEmbeddingProgress?: (progress: EmbeddingProgress) => void;
  onModelProgress?: (progress: ModelProgress) => void;
}

/** What the worker exposes over Comlink: `open` once, then the Memory methods (`sync` runs on the page: connect() adds it). */
export interface WorkerApi extends Omit<Memory, 'sync'> {
  /** Callbacks are separate arguments: Comlink proxies only top-level arguments. Answers where the memory lives. */
  open(options: WorkerMemoryOptions, onEmbeddingProgress?: WorkerCallbacks['onEmbeddingProgress'], onModelProgress?: WorkerCallbacks['onModelProgress']): Promise<StorageStatus>;
}
