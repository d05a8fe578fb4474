import { PagewiseError } from '../contracts/errors.js';
import type { Embedder, RemoteEmbeddingOptions } from '../contracts/types.js';

/** What a Workers AI binding offers (`env.AI`), structurally. */
export interface WorkersAiLike {
  run(model: string, input: { text: string[]; pooling?: 'cls' | 'mean' }): Promise<{ data: number[][] }>;
}

/**
 * An embedder on the Workers AI binding. The default model, bge-small-en-v1.5 with CLS pooling, gives the vectors the
 * browser's bge-small-en-v1.5 gives (the ONNX runtime's wasm is over the Workers size limit).
 */
export function workersAiEmbedder(ai: WorkersAiLike, options: { model?: string; dimensions?: number } = {}): Embedder {
  if (typeof ai?.run !== 'function') throw new PagewiseError('INVALID_OPTIONS', 'edge', 'workersAiEmbedder needs the Workers AI binding (env.AI: add "ai": { "binding": "AI" } to wrangler.jsonc).');
  const model = options.model ?? '@cf/baai/bge-small-en-v1.5';
  return {
    modelId: `workers-ai:${model}`, dimensions: options.dimensions ?? 384, maxBatchSize: 32, threshold: 0.5, local: false,
    async embed(texts) {
      const out = await ai.run(model, { text: [...texts], pooling: 'cls' });
      if (!Array.isArray(out?.data) || out.data.length !== texts.length) {
        throw new PagewiseError('EMBEDDING_ERROR', 'edge', `Workers AI ${model} answered ${out?.data?.length ?? 'no'} vectors for ${texts.length} texts.`);
      }
      return out.data.map((v) => Float32Array.from(v));
    },
  };
}

/** What `edgeEmbedder` reads from a Worker's `env`. */
export interface EdgeEmbeddingEnv {
  AI?: WorkersAiLike;
  PAGEWISE_EMBEDDINGS_URL?: string;
  PAGEWISE_EMBEDDINGS_MODEL?: string;
  PAGEWISE_EMBEDDINGS_KEY?: string;
}

/**
 * The embedder a Worker can have, in order: the Workers AI binding (`env.AI`; bge-small-en-v1.5, the browser's vector
 * space), an OpenAI-compatible `/v1/embeddings` (`env.PAGEWISE_EMBEDDINGS_URL`, `_MODEL`, `_KEY`), else none: tags
 * and BM25 (the ONNX runtime's wasm is over the Workers size limit).
 */
export function edgeEmbedder(env: EdgeEmbeddingEnv | undefined): Embedder | RemoteEmbeddingOptions | false {
  if (typeof env?.AI?.run === 'function') return workersAiEmbedder(env.AI);
  if (typeof env?.PAGEWISE_EMBEDDINGS_URL === 'string' && env.PAGEWISE_EMBEDDINGS_URL !== '') {
    return {
      provider: 'openai-compatible', baseUrl: env.PAGEWISE_EMBEDDINGS_URL, model: env.PAGEWISE_EMBEDDINGS_MODEL ?? 'text-embedding-3-small',
      ...(env.PAGEWISE_EMBEDDINGS_KEY ? { apiKey: env.PAGEWISE_EMBEDDINGS_KEY } : {}),
    };
  }
  return false;
}
