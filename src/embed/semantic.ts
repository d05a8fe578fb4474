import type { Background } from '../common/background.js';
import type { Embedder, EmbedderOptions, EmbeddingStatus, EmbeddingProgress, ModelProgress } from '../contracts/types-embed.js';
import type { StorageDriver } from '../contracts/types.js';
import { type Serial, createEmbedQueue } from './embed-queue.js';
import { createIndexCache } from './index-cache.js';
import { createModelLoad } from './model-load.js';
import { createQueryEmbedding } from './query-vector.js';
import { remoteEmbedder } from './remote.js';
import { transformersEmbedder } from './transformers.js';
import type { SearchFilter, VectorHit } from './vector-index.js';
import { createVectorStore } from './vector-store.js';

export type { QueryVector } from './query-vector.js';

/** The embedder the `embedder` option names (or null). */
export function makeEmbedder(e: Exclude<EmbedderOptions, false> | null, onModel?: (p: ModelProgress) => void): Embedder | null {
  if (!e) return null;
  if ('embed' in e && typeof e.embed === 'function') return e;
  const config = e as Exclude<typeof e, Embedder>;
  if (config.provider === 'transformers') return transformersEmbedder(config, onModel);
  return remoteEmbedder(config);
}

/**
 * Meaning-based memory: embeds stored turns and summaries in the background (batched, resumable: what is missing
 * is read from SQLite), embeds the question on the request path, and searches each conversation's vectors exactly.
 * Any embedder failure becomes a note; retrieval goes on with tags and BM25. Composed of the model's load and its
 * failure state (model-load), the indexes held in memory (index-cache), the background queue (embed-queue) and the
 * question's vector (query-vector); search and status read them here.
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
  const { embedder } = deps;
  // Only a model on this device is given private messages (an embedder that does not say it is local is remote).
  const local = embedder?.local === true;
  const store = createVectorStore(deps.driver);
  const model = createModelLoad(embedder);
  const { state } = model;
  const turnIndexes = createIndexCache(store, embedder, 'turn');
  const summaryIndexes = createIndexCache(store, embedder, 'summary');
  const queue = createEmbedQueue({ embedder, local, store, model, turnIndexes, summaryIndexes, background: deps.background, serial: deps.serial, onProgress: deps.onProgress });
  const threshold = (): number => deps.threshold ?? embedder?.threshold ?? 0.3;

  return {
    /** Drops the conversation's vectors held in memory (its turns or summaries were removed: forget). */
    uncache(conversationId: string): void {
      queue.uncheck(conversationId);
      turnIndexes.cache.delete(conversationId);
      summaryIndexes.cache.delete(conversationId);
    },
    /** After new turns (or on first sight of a conversation: resumes what a reload interrupted). */
    schedule: queue.schedule,
    /** Starts loading the model now (preloadEmbedder); a failure surfaces as a note at the first question. */
    warm(): void {
      if (embedder) void model.loaded();
    },

    /** Resolves when a model load under way has finished (flush() waits for it like for the queue). */
    settled: model.settled,
    touch: queue.touch,

    /** The question's vector, or null with a note saying why (see createQueryEmbedding). */
    query: createQueryEmbedding({ embedder, local, implicit: deps.implicit, model }),

    /** Background model work besides stored texts (the embedding tagger's tag names); throws when there is no model. */
    async embedBackground(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
      if (!embedder || state.loadFailure || !(await model.loaded())) throw new Error(state.loadFailure ?? 'no embedder');
      return embedder.embed(texts, signal);
    },

    /** Turns most similar to `vector`, above the threshold, filters applied first. Call inside an engine operation. */
    async searchTurns(conversationId: string, vector: Float32Array, limit: number, filter?: SearchFilter, minScore = threshold()): Promise<VectorHit[]> {
      const index = await turnIndexes.load(conversationId);
      return index.search(vector, limit, minScore, filter);
    },

    /** Cosine of each given stored turn to `vector` (turns not embedded yet are absent). Call inside an engine operation. */
    async scoreTurns(conversationId: string, vector: Float32Array, seqs: Iterable<number>): Promise<Map<number, number>> {
      return (await turnIndexes.load(conversationId)).scores(vector, seqs);
    },

    /** The similarity above which a turn counts as related in meaning (the embedder's, or the option). */
    threshold,

    /**
     * Summaries most similar to `vector`, above the threshold, from an index in memory (a long conversation has
     * thousands: reading them from SQLite for each question grew with it). Call inside an engine operation.
     */
    async searchSummaries(conversationId: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
      if (!embedder) return [];
      const hits = (await summaryIndexes.load(conversationId)).search(vector, limit * 4, threshold());
      // Only summaries still stored (the engine keeps them all; a database may have lost some).
      const stored = await store.storedSummaries(conversationId, hits.map((h) => h.ref));
      return hits.filter((h) => stored.has(h.ref)).slice(0, limit);
    },

    /** How much of a conversation is embedded, and the last failure. */
    async status(conversationId: string): Promise<EmbeddingStatus> {
      const c = embedder ? await store.counts(conversationId, embedder.modelId, local) : { total: 0, embedded: 0 };
      return { conversationId, modelId: embedder?.modelId ?? '', ...c, lastError: state.loadFailure ?? state.lastFailure, ...(state.missingPackages ? { missingPackages: state.missingPackages } : {}) };
    },

    /** The background queue's last failure (a batch the embedder refused), cleared by the next batch it embeds. */
    lastFailure: (): string | null => state.lastFailure,

    /** The model vectors are made with now (null: no embedder, or it failed to load). */
    modelId: (): string | null => (embedder && !state.loadFailure ? embedder.modelId : null),

    /** Over every conversation, texts with a vector of the current model and texts in all (null: no embedder). */
    async progress(): Promise<{ modelId: string; done: number; total: number } | null> {
      if (!embedder) return null;
      return { modelId: embedder.modelId, ...(await store.progress(embedder.modelId, local)) };
    },

    /** The most recently updated conversations with texts waiting for the current model's vectors, newest first. */
    lacking: (limit: number): Promise<string[]> => (embedder ? store.lacking(embedder.modelId, local, limit) : Promise.resolve([])),

    /** Whether any turn waits for its vector (a note for the manifest while an import is being embedded). */
    async unembedded(conversationId: string, turns: number): Promise<number> {
      if (!embedder || state.loadFailure) return 0;
      const withheld = local ? 0 : await store.privateTurns(conversationId);
      return Math.max(0, turns - withheld - (await turnIndexes.load(conversationId)).size);
    },
  };
}

export type Semantic = ReturnType<typeof createSemantic>;
