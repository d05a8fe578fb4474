import { PagewiseError } from '../contracts/errors.js';
import { postJson } from '../llm/http.js';
import { redact, secretsOf } from '../text/redact.js';
import type { Embedder, RemoteEmbeddingOptions } from '../contracts/types-embed.js';

const MODULE = 'embedder';

/**
 * An OpenAI-compatible `/v1/embeddings` endpoint over fetch (no SDK): timeouts, retries with backoff on 429/5xx,
 * AbortSignal. The dimensions are learned from the first reply unless configured.
 */
export function remoteEmbedder(options: RemoteEmbeddingOptions): Embedder {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  // The endpoint as messages name it: credentials in the URL redacted (postJson redacts its own messages).
  const shown = redact(url, secretsOf({ url }));
  let dimensions = options.dimensions ?? 0;
  return {
    modelId: `openai-compatible:${options.model}${options.dimensions ? `@${options.dimensions}` : ''}`,
    local: false,
    get dimensions() { return dimensions; },
    maxBatchSize: options.maxBatchSize ?? 64,
    threshold: options.threshold ?? 0.3,
    async embed(texts, signal) {
      if (texts.length === 0) return [];
      const body: Record<string, unknown> = { model: options.model, input: texts, encoding_format: 'float' };
      if (options.dimensions) body.dimensions = options.dimensions;
      const reply = await postJson(url, body, headers, options, signal, 'EMBEDDING_ERROR') as { data?: Array<{ index?: number; embedding?: unknown }> };
      const data = reply?.data;
      if (!Array.isArray(data) || data.length !== texts.length) {
        throw new PagewiseError('EMBEDDING_ERROR', MODULE, `${shown} answered without one embedding per input (${texts.length} sent, ${Array.isArray(data) ? data.length : 'no data'} back).`);
      }
      const out = new Array<Float32Array>(texts.length);
      data.forEach((d, i) => {
        const v = d.embedding;
        if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'number')) {
          throw new PagewiseError('EMBEDDING_ERROR', MODULE, `${shown} answered an embedding that is not a list of numbers (set encoding_format "float" on your server).`);
        }
        if (dimensions === 0) dimensions = v.length;
        if (v.length !== dimensions) throw new PagewiseError('EMBEDDING_ERROR', MODULE, `${shown} answered ${v.length} dimensions, expected ${dimensions}.`);
        out[typeof d.index === 'number' ? d.index : i] = Float32Array.from(v as number[]);
      });
      return out;
    },
  };
}
