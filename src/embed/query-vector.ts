import type { Embedder } from '../contracts/types-embed.js';
import { type ModelLoad, describeFailure } from './model-load.js';
import { MAX_CHARS, normalize } from './vector-store.js';

export interface QueryVector {
  vector: Float32Array | null;
  notes: string[];
}

export interface QueryEmbeddingDeps {
  embedder: Embedder | null;
  /** Whether a private question may be embedded (a model on this device). */
  local: boolean;
  /** True when nobody asked for the default embedder: a missing optional package is then expected. */
  implicit: boolean;
  model: ModelLoad;
}

/**
 * The question's vector, or null with a note saying why (no embedder, model still loading, load failure, endpoint
 * down). A model that is still loading is not waited for: loading is not the request's work (a first page load
 * fetches ~37 MB, the model and the ONNX runtime); this answer uses tags + BM25 and the next ones the model. A
 * private question is not given to a remote embedder.
 */
export function createQueryEmbedding({ embedder, local, implicit, model }: QueryEmbeddingDeps) {
  const { state } = model;
  return async (text: string, signal?: AbortSignal, privateText = false): Promise<QueryVector> => {
    if (!embedder) return { vector: null, notes: [] };
    if (privateText && !local) return { vector: null, notes: ['a private message is not sent to a remote embedder: this answer used tags + BM25 only.'] };
    if (!state.loadFailure && !state.ready && embedder.load) {
      // One macrotask turn: a model this process has loaded already (another engine's) answers within it.
      const ready = await Promise.race([model.loaded(), new Promise<false>((resolve) => setTimeout(resolve, 0, false))]);
      if (!ready && !state.loadFailure) return { vector: null, notes: ['embedding model still loading: this answer used tags + BM25 only.'] };
    }
    if (state.loadFailure) {
      if (implicit) return { vector: null, notes: [`embeddings off (the default embedder is not available): ${state.loadFailure}`] };
      return { vector: null, notes: [`embeddings off: ${state.loadFailure}`] };
    }
    try {
      const head = text.slice(0, MAX_CHARS);
      const v = embedder.embedQuery ? await embedder.embedQuery(head, signal) : (await embedder.embed([head], signal))[0];
      state.ready = true;
      return { vector: normalize(v!), notes: [] };
    } catch (cause) {
      const why = describeFailure(cause);
      if (!(await model.loaded())) state.loadFailure = why;
      if (implicit && state.loadFailure) return { vector: null, notes: [`embeddings off (the default embedder is not available): ${why}`] };
      return { vector: null, notes: [`embeddings skipped for this request, retrieval used tags + BM25: ${why}`] };
    }
  };
}
