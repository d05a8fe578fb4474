import { Lru } from '../common/cache.js';
import type { Embedder } from '../contracts/types-embed.js';
import { type VectorIndex, createVectorIndex } from './vector-index.js';
import type { VectorStore } from './vector-store.js';

// Conversations whose vectors are held in memory at once.
const MAX_INDEXES = 8;

/**
 * The vectors of one kind for the few most recently used conversations, kept in memory (a 10,000-turn one takes
 * 4.6 MB at 384-d), loaded once, then appended to as the queue embeds.
 */
export function createIndexCache(store: VectorStore, embedder: Embedder | null, kind: 'turn' | 'summary') {
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
}

export type IndexCache = ReturnType<typeof createIndexCache>;
