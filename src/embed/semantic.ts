import type { Background } from '../background.js';
import { isPagewiseError } from '../errors.js';
import type { Embedder, EmbeddingProgress, EmbeddingStatus, ModelProgress } from '../types-embed.js';
import type { ResolvedOptions } from '../options.js';
import type { StorageDriver } from '../types.js';
import { remoteEmbedder } from './remote.js';
import { transformersEmbedder } from './transformers.js';
import { type SearchFilter, type VectorHit, type VectorIndex, createVectorIndex } from './vector-index.js';
import { MAX_CHARS, type PendingText, createVectorStore, normalize } from './vector-store.js';
import { CACHED_CONVERSATIONS, Lru } from '../cache.js';

/** A slot of the engine's scheduler on the conversation's key (calls on other conversations do not wait for it). */
type Serial = <T>(fn: () => Promise<T>, conversationId: string) => Promise<T>;

// Conversations whose vectors are held in memory at once.
const MAX_INDEXES = 8;

// Batches per background job before it yields to other background work (compaction) and requeues itself.
const BATCHES_PER_JOB = 4;

/** The embedder the options name (or null). */
export function makeEmbedder(opts: ResolvedOptions, onModel?: (p: ModelProgress) => void): Embedder | null {
  const e = opts.embedder;
  if (!e) return null;
  if ('embed' in e && typeof e.embed === 'function') return e;
  const config = e as Exclude<typeof e, Embedder>;
  if (config.provider === 'transformers') return transformersEmbedder(config, onModel);
  return remoteEmbedder(config);
}

export interface QueryVector {
  vector: Float32Array | null;
  notes: string[];
}

/**
 * Meaning-based memory: embeds stored turns and summaries in the background (batched, resumable: what is missing
 * is read from SQLite), embeds the question on the request path, and searches each conversation's vectors exactly.
 * Any embedder failure becomes a note; retrieval goes on with tags and BM25.
 */
export function createSemantic(deps: {
  driver: StorageDriver;
  embedder: Embedder | null;
  /** True when nobody asked for the default embedder: a missing optional package is then expected. */
  implicit: boolean;
  threshold: number | undefined;
  background: Background;
  /** The job takes its conversation's slots one storage step at a time. */
  serial: Serial;
  onProgress?: (p: EmbeddingProgress) => void;
}) {
  const { embedder, background } = deps;
  // Only a model on this device is given private messages (an embedder that does not say it is local is remote).
  const local = embedder?.local === true;
  const store = createVectorStore(deps.driver);
  // Conversations already checked for vectors a reload left missing: the most recently used only (an engine may see
  // any number of ids; a conversation checked again only costs one look at its pending turns).
  const checked = new Lru<string, true>(CACHED_CONVERSATIONS);
  // A model that failed to load stays off for this engine (a load is costly); other failures are retried.
  let loadFailure: string | null = null;
  let lastFailure: string | null = null;
  // Optional packages the embedder found missing (its load failure says which): for embeddingStatus.
  let missingPackages: string[] | undefined;

  const describeFailure = (cause: unknown): string => (isPagewiseError(cause) ? cause.message : `embedding failed: ${String((cause as Error)?.message ?? cause)}`);

  // The vectors of the few most recently used conversations stay in memory (a 10,000-turn one takes 4.6 MB at 384-d),
  // loaded once, then appended to as the queue embeds.
  const indexes = (kind: 'turn' | 'summary') => {
    const cache = new Lru<string, Promise<VectorIndex>>(MAX_INDEXES);
    const load = (conversationId: string): Promise<VectorIndex> => {
      let p = cache.get(conversationId);
      if (!p) {
        const loading = (async () => {
          const index = createVectorIndex(embedder!.dimensions);
          index.add(await store.load(conversationId, embedder!.modelId, kind));
          return index;
        })();
        loading.catch(() => { if (cache.get(conversationId) === loading) cache.delete(conversationId); });
        cache.set(conversationId, loading);
        p = loading;
      }
      return p;
    };
    return { cache, load };
  };
  const turnIndexes = indexes('turn');
  const summaryIndexes = indexes('summary');
  const turnIndex = turnIndexes.load;
  const summaryIndex = summaryIndexes.load;

  const threshold = (): number => deps.threshold ?? embedder?.threshold ?? 0.3;

  const job = (conversationId: string) => async (): Promise<void> => {
    if (!embedder || loadFailure) return;
    if (!(await loaded())) return;
    const serial = <T>(fn: () => Promise<T>) => deps.serial(fn, conversationId);
    for (let b = 0; b < BATCHES_PER_JOB; b++) {
      if (background.signal.aborted) return;
      const batch: PendingText[] = await serial(() => store.pending(conversationId, embedder.modelId, embedder.maxBatchSize, local));
      if (batch.length === 0) {
        await serial(() => store.dropOtherModels(conversationId, embedder.modelId));
        return;
      }
      let vectors: Float32Array[];
      try {
        vectors = await embedder.embed(batch.map((p) => p.text), background.signal);
        lastFailure = null;
        modelReady = true;
      } catch (cause) {
        if (background.signal.aborted) return;
        lastFailure = describeFailure(cause);
        if (!(await loaded())) loadFailure = lastFailure;
        return;
      }
      // Stored as int8 of the unit vector (quantize normalizes).
      const items = batch.map((item, i) => ({ item, vector: vectors[i]! }));
      const saved = await serial(() => store.save(conversationId, embedder.modelId, items));
      // A macrotask turn between batches: the model's work resolves through microtasks only, which would starve
      // timers and (in the worker) the page's incoming requests until the whole queue is done.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const index = turnIndexes.cache.get(conversationId);
      if (index) (await index).add(saved.turns);
      const summaries = summaryIndexes.cache.get(conversationId);
      // A rewritten summary keeps its row id: its new vector takes the old one's place.
      if (summaries && saved.summaries.length > 0) (await summaries).add(saved.summaries);
      if (deps.onProgress) {
        const c = await serial(() => store.counts(conversationId, embedder.modelId, local));
        deps.onProgress({ conversationId, modelId: embedder.modelId, ...c });
      }
    }
    schedule(conversationId);
  };

  let modelReady = false;
  // The load under way (or done): started by preloadEmbedder, the first question, or the first background batch.
  let loading: Promise<boolean> | null = null;
  const loaded = (): Promise<boolean> => {
    if (modelReady) return Promise.resolve(true);
    loading ??= (async () => {
      try {
        await embedder!.load?.();
        modelReady = true;
        return true;
      } catch (cause) {
        // A load that failed is not retried (it is costly and would fail again); the reason goes into notes.
        loadFailure = describeFailure(cause);
        const missing = (cause as { missingPackages?: unknown } | null)?.missingPackages;
        if (Array.isArray(missing)) missingPackages = missing.map(String);
        return false;
      }
    })();
    return loading;
  };

  function schedule(conversationId: string): void {
    if (!embedder || loadFailure) return;
    background.later(`embed:${conversationId}`, job(conversationId), conversationId);
  }

  return {
    /** Drops the conversation's vectors held in memory (its turns or summaries were removed: forget). */
    uncache(conversationId: string): void {
      checked.delete(conversationId);
      turnIndexes.cache.delete(conversationId);
      summaryIndexes.cache.delete(conversationId);
    },
    /** After new turns (or on first sight of a conversation: resumes what a reload interrupted). */
    schedule,
    /** Starts loading the model now (preloadEmbedder); a failure surfaces as a note at the first question. */
    warm(): void {
      if (embedder) void loaded();
    },

    /** Resolves when a model load under way has finished (flush() waits for it like for the queue). */
    async settled(): Promise<void> {
      if (loading) await loading;
    },
    touch(conversationId: string): void {
      if (!embedder || loadFailure || checked.get(conversationId)) return;
      checked.set(conversationId, true);
      schedule(conversationId);
    },

    /**
     * The question's vector, or null with a note saying why (no embedder, model still loading, load failure, endpoint
     * down). A model that is still loading is not waited for: loading is not the request's work (a first page load
     * fetches ~37 MB, the model and the ONNX runtime); this answer uses tags + BM25 and the next ones the model. A
     * private question is not given to a remote embedder.
     */
    async query(text: string, signal?: AbortSignal, privateText = false): Promise<QueryVector> {
      if (!embedder) return { vector: null, notes: [] };
      if (privateText && !local) return { vector: null, notes: ['a private message is not sent to a remote embedder: this answer used tags + BM25 only.'] };
      if (!loadFailure && !modelReady && embedder.load) {
        // One macrotask turn: a model this process has loaded already (another engine's) answers within it.
        const ready = await Promise.race([loaded(), new Promise<false>((resolve) => setTimeout(resolve, 0, false))]);
        if (!ready && !loadFailure) return { vector: null, notes: ['embedding model still loading: this answer used tags + BM25 only.'] };
      }
      if (loadFailure) {
        if (deps.implicit) return { vector: null, notes: [`embeddings off (the default embedder is not available): ${loadFailure}`] };
        return { vector: null, notes: [`embeddings off: ${loadFailure}`] };
      }
      try {
        const head = text.slice(0, MAX_CHARS);
        const v = embedder.embedQuery ? await embedder.embedQuery(head, signal) : (await embedder.embed([head], signal))[0];
        modelReady = true;
        return { vector: normalize(v!), notes: [] };
      } catch (cause) {
        const why = describeFailure(cause);
        if (!(await loaded())) loadFailure = why;
        if (deps.implicit && loadFailure) return { vector: null, notes: [`embeddings off (the default embedder is not available): ${why}`] };
        return { vector: null, notes: [`embeddings skipped for this request, retrieval used tags + BM25: ${why}`] };
      }
    },

    /** Background model work besides stored texts (the embedding tagger's tag names); throws when there is no model. */
    async embedBackground(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
      if (!embedder || loadFailure || !(await loaded())) throw new Error(loadFailure ?? 'no embedder');
      return embedder.embed(texts, signal);
    },

    /** Turns most similar to `vector`, above the threshold, filters applied first. Call inside an engine operation. */
    async searchTurns(conversationId: string, vector: Float32Array, limit: number, filter?: SearchFilter): Promise<VectorHit[]> {
      const index = await turnIndex(conversationId);
      return index.search(vector, limit, threshold(), filter);
    },

    /**
     * Summaries most similar to `vector`, above the threshold, from an index in memory (a long conversation has
     * thousands: reading them from SQLite for each question grew with it). Call inside an engine operation.
     */
    async searchSummaries(conversationId: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
      if (!embedder) return [];
      const hits = (await summaryIndex(conversationId)).search(vector, limit * 4, threshold());
      // Only summaries still stored (the engine keeps them all; a database may have lost some).
      const stored = await store.storedSummaries(conversationId, hits.map((h) => h.ref));
      return hits.filter((h) => stored.has(h.ref)).slice(0, limit);
    },

    /** How much of a conversation is embedded, and the last failure. */
    async status(conversationId: string): Promise<EmbeddingStatus> {
      const c = embedder ? await store.counts(conversationId, embedder.modelId, local) : { total: 0, embedded: 0 };
      return { conversationId, modelId: embedder?.modelId ?? '', ...c, lastError: loadFailure ?? lastFailure, ...(missingPackages ? { missingPackages } : {}) };
    },

    /** Whether any turn waits for its vector (a note for the manifest while an import is being embedded). */
    async unembedded(conversationId: string, turns: number): Promise<number> {
      if (!embedder || loadFailure) return 0;
      const withheld = local ? 0 : await store.privateTurns(conversationId);
      return Math.max(0, turns - withheld - (await turnIndex(conversationId)).size);
    },
  };
}

export type Semantic = ReturnType<typeof createSemantic>;
