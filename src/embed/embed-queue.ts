import type { Background } from '../common/background.js';
import { CACHED_CONVERSATIONS, Lru } from '../common/cache.js';
import type { Embedder, EmbeddingProgress } from '../contracts/types-embed.js';
import type { IndexCache } from './index-cache.js';
import { type ModelLoad, describeFailure } from './model-load.js';
import type { PendingText, VectorStore } from './vector-store.js';

/** A slot of the engine's scheduler on the conversation's key (calls on other conversations do not wait for it). */
export type Serial = <T>(fn: () => Promise<T>, conversationId: string) => Promise<T>;

// Batches per background job before it yields to other background work (compaction) and requeues itself.
const BATCHES_PER_JOB = 4;

export interface EmbedQueueDeps {
  embedder: Embedder | null;
  /** Whether private turns may be embedded (a model on this device). */
  local: boolean;
  store: VectorStore;
  model: ModelLoad;
  turnIndexes: IndexCache;
  summaryIndexes: IndexCache;
  background: Background;
  /** The job takes its conversation's slots one storage step at a time. */
  serial: Serial;
  onProgress?: (p: EmbeddingProgress) => void;
}

/**
 * The background embedding of stored texts: batched and resumable (what is missing is read from SQLite), one job per
 * conversation that requeues itself after a few batches, its vectors appended to the indexes held in memory.
 */
export function createEmbedQueue(deps: EmbedQueueDeps) {
  const { embedder, local, store, model, background } = deps;
  const { state } = model;
  // Conversations already checked for vectors a reload left missing: the most recently used only (an engine may see
  // any number of ids; a conversation checked again only costs one look at its pending turns).
  const checked = new Lru<string, true>(CACHED_CONVERSATIONS);

  const job = (conversationId: string) => async (): Promise<void> => {
    if (!embedder || state.loadFailure) return;
    if (!(await model.loaded())) return;
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
        state.lastFailure = null;
        state.ready = true;
      } catch (cause) {
        if (background.signal.aborted) return;
        state.lastFailure = describeFailure(cause);
        if (!(await model.loaded())) state.loadFailure = state.lastFailure;
        return;
      }
      // Stored as int8 of the unit vector (quantize normalizes).
      const items = batch.map((item, i) => ({ item, vector: vectors[i]! }));
      const saved = await serial(() => store.save(conversationId, embedder.modelId, items));
      // A macrotask turn between batches: the model's work resolves through microtasks only, which would starve
      // timers and (in the worker) the page's incoming requests until the whole queue is done.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const index = deps.turnIndexes.cache.get(conversationId);
      if (index) (await index).add(saved.turns);
      const summaries = deps.summaryIndexes.cache.get(conversationId);
      // A rewritten summary keeps its row id: its new vector takes the old one's place.
      if (summaries && saved.summaries.length > 0) (await summaries).add(saved.summaries);
      if (deps.onProgress) {
        const c = await serial(() => store.counts(conversationId, embedder.modelId, local));
        deps.onProgress({ conversationId, modelId: embedder.modelId, ...c });
      }
    }
    schedule(conversationId);
  };

  function schedule(conversationId: string): void {
    if (!embedder || state.loadFailure) return;
    background.later(`embed:${conversationId}`, job(conversationId), conversationId);
  }

  return {
    /** After new turns (or on first sight of a conversation: resumes what a reload interrupted). */
    schedule,
    /** Schedules a conversation not seen lately, in case a reload left some of its texts without vectors. */
    touch(conversationId: string): void {
      if (!embedder || state.loadFailure || checked.get(conversationId)) return;
      checked.set(conversationId, true);
      schedule(conversationId);
    },
    /** Forgets that the conversation was checked (its turns or summaries were removed). */
    uncheck(conversationId: string): void {
      checked.delete(conversationId);
    },
  };
}
