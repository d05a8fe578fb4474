import { PagewiseError } from '../errors.js';
import type { Embedder, ModelProgress, TransformersOptions } from '../types-embed.js';

const MODULE = 'embedder';

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ data: Float32Array; dims: number[]; dispose?: () => void }>;

/**
 * A transformers.js feature-extraction model: mean pooling + normalization, local files first. In the browser the
 * ONNX runtime's WASM comes from `wasmPaths` on your origin (never a CDN); WebGPU is used when the browser has it.
 */
export function transformersEmbedder(options: TransformersOptions, onProgress?: (p: ModelProgress) => void): Embedder {
  const modelId = `transformers:${options.model}${options.dtype ? `@${options.dtype}` : ''}`;
  let dimensions = options.dimensions ?? 0;
  let extractor: Promise<Extractor> | undefined;
  const load = (): Promise<Extractor> => (extractor ??= (async () => {
    let hf: typeof import('@huggingface/transformers');
    try {
      hf = await import('@huggingface/transformers');
    } catch (cause) {
      throw new PagewiseError('EMBEDDING_ERROR', MODULE, 'transformers.js is not installed: npm i @huggingface/transformers@4.3.1 (offline, add onnxruntime-node-install=skip to your .npmrc), or use another embedder.', { cause });
    }
    const { env } = hf;
    env.allowRemoteModels = options.allowRemoteModels ?? false;
    env.allowLocalModels = true;
    if (options.localModelPath) env.localModelPath = options.localModelPath;
    if (options.remoteHost) env.remoteHost = options.remoteHost;
    const browser = typeof (globalThis as { document?: unknown }).document !== 'undefined' || typeof (globalThis as { importScripts?: unknown }).importScripts === 'function';
    const wasm = env.backends.onnx.wasm;
    if (options.wasmPaths && wasm) wasm.wasmPaths = options.wasmPaths as never;
    else if (browser && wasm) {
      throw new PagewiseError('EMBEDDING_ERROR', MODULE, 'transformers.js in the browser needs wasmPaths: the ONNX runtime files served from your own origin (import them with Vite `?url`).');
    }
    const gpu = (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu;
    const device = options.device ?? (browser ? (gpu ? 'webgpu' : 'wasm') : 'cpu');
    try {
      const pipe = await hf.pipeline('feature-extraction', options.model, {
        device: device as never,
        ...(options.dtype ? { dtype: options.dtype as never } : {}),
        progress_callback: (p: { status?: string; progress?: number; file?: string }) => {
          if (p.status === 'progress') onProgress?.({ modelId, status: 'loading', progress: (p.progress ?? 0) / 100, file: p.file });
        },
      });
      onProgress?.({ modelId, status: 'ready', progress: 1 });
      return pipe as unknown as Extractor;
    } catch (cause) {
      extractor = undefined;
      throw new PagewiseError('EMBEDDING_ERROR', MODULE, `transformers.js could not load "${options.model}" (${(cause as Error).message}). `
        + 'Check localModelPath (<path>/<model>/onnx/model.onnx and tokenizer files) or allowRemoteModels.', { cause });
    }
  })());
  return {
    modelId,
    get dimensions() { return dimensions; },
    maxBatchSize: options.maxBatchSize ?? 16,
    threshold: options.threshold ?? 0.3,
    async load() { await load(); },
    async embedQuery(text, signal) {
      return (await run([(options.queryPrefix ?? '') + text], signal))[0]!;
    },
    async embed(texts, signal) {
      return run(texts.map((t) => (options.passagePrefix ?? '') + t), signal);
    },
  };
  async function run(prefixed: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const pipe = await load();
    if (signal?.aborted) throw signal.reason;
    if (prefixed.length === 0) return [];
    const out = await pipe(prefixed, { pooling: 'mean', normalize: true });
    const d = out.dims[out.dims.length - 1]!;
    if (dimensions === 0) dimensions = d;
    const vectors = prefixed.map((_, i) => out.data.slice(i * d, (i + 1) * d));
    out.dispose?.();
    return vectors;
  }
}
