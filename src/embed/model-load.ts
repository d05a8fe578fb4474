import { isPagewiseError } from '../contracts/errors.js';
import type { Embedder } from '../contracts/types-embed.js';

/**
 * Whether the model can be used, and why not: written by the load, the background queue and the question's vector,
 * read by the status. One object shared by those parts (not variables captured by one closure).
 */
export interface ModelState {
  /** The model answered once (a load finished, or an embedding came back): later questions need not wait for it. */
  ready: boolean;
  /** A model that failed to load stays off for this engine (a load is costly); other failures are retried. */
  loadFailure: string | null;
  /** The last embedding failure, cleared by the next batch that succeeds. */
  lastFailure: string | null;
  /** Optional packages the embedder found missing (its load failure says which): for embeddingStatus. */
  missingPackages: string[] | undefined;
}

/** The note a failure leaves: a pagewise error's own message, or what the embedder threw. */
export const describeFailure = (cause: unknown): string => (isPagewiseError(cause) ? cause.message : `embedding failed: ${String((cause as Error)?.message ?? cause)}`);

/** Loading the embedder's model once, and the state that records whether it can be used. */
export function createModelLoad(embedder: Embedder | null) {
  const state: ModelState = { ready: false, loadFailure: null, lastFailure: null, missingPackages: undefined };
  // The load under way (or done): started by preloadEmbedder, the first question, or the first background batch.
  let loading: Promise<boolean> | null = null;

  const loaded = (): Promise<boolean> => {
    if (state.ready) return Promise.resolve(true);
    loading ??= (async () => {
      try {
        await embedder!.load?.();
        state.ready = true;
        return true;
      } catch (cause) {
        // A load that failed is not retried (it is costly and would fail again); the reason goes into notes.
        state.loadFailure = describeFailure(cause);
        const missing = (cause as { missingPackages?: unknown } | null)?.missingPackages;
        if (Array.isArray(missing)) state.missingPackages = missing.map(String);
        return false;
      }
    })();
    return loading;
  };

  return {
    state,
    /** Whether the model is loaded, starting its load on the first call. */
    loaded,
    /** Resolves when a model load under way has finished. */
    async settled(): Promise<void> {
      if (loading) await loading;
    },
  };
}

export type ModelLoad = ReturnType<typeof createModelLoad>;
