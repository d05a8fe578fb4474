import { describe, expect, it } from 'vitest';
import { edgeEmbedder, workersAiEmbedder } from '../../../src/embed/workers-ai.js';

describe('embedders at the edge', () => {
  it('takes the Workers AI binding first, then an OpenAI-compatible endpoint, else none (tags + BM25)', async () => {
    const calls: unknown[] = [];
    const ai = { run: async (model: string, input: { text: string[]; pooling?: string }) => { calls.push([model, input]); return { data: input.text.map(() => [0.6, 0.8]) }; } };
    const e = edgeEmbedder({ AI: ai, PAGEWISE_EMBEDDINGS_URL: 'https://example.invalid/v1' }) as ReturnType<typeof workersAiEmbedder>;
    expect(e.modelId).toBe('workers-ai:@cf/baai/bge-small-en-v1.5');
    expect(await e.embed(['a', 'b'])).toEqual([Float32Array.from([0.6, 0.8]), Float32Array.from([0.6, 0.8])]);
    // CLS pooling: the vectors the browser's bge-small-en-v1.5 gives.
    expect(calls).toEqual([['@cf/baai/bge-small-en-v1.5', { text: ['a', 'b'], pooling: 'cls' }]]);
    expect(edgeEmbedder({ PAGEWISE_EMBEDDINGS_URL: 'https://e.invalid/v1', PAGEWISE_EMBEDDINGS_KEY: 'k' })).toEqual({ provider: 'openai-compatible', baseUrl: 'https://e.invalid/v1', model: 'text-embedding-3-small', apiKey: 'k' });
    expect(edgeEmbedder({})).toBe(false);
    expect(edgeEmbedder(undefined)).toBe(false);
    const short = workersAiEmbedder({ run: async () => ({ data: [[1]] }) });
    await expect(short.embed(['a', 'b'])).rejects.toMatchObject({ code: 'EMBEDDING_ERROR' });
    expect(() => workersAiEmbedder({} as never)).toThrow(/env\.AI/);
  });
});

describe('the edge build carries one tokenizer package', () => {
  it('pagewise/edge\'s engine has gpt-tokenizer; js-tiktoken is a typed error there, not a second copy of the ranks', async () => {
    const { build } = await import('esbuild');
    const out = await build({
      entryPoints: [new URL('../../../src/edge.ts', import.meta.url).pathname], bundle: true, format: 'esm', platform: 'neutral', write: false, metafile: true,
      external: ['cloudflare:workers'], mainFields: ['module', 'main'], conditions: ['worker', 'workerd', 'import'],
    });
    const inputs = Object.keys(out.metafile!.inputs);
    expect(inputs.some((i) => i.includes('node_modules/gpt-tokenizer/'))).toBe(true);
    expect(inputs.filter((i) => i.includes('node_modules/js-tiktoken/'))).toEqual([]);
  });
});
